// HttpClientHandler: the last handler of a client connection (behind HttpClientCodec and
// HttpObjectAggregator). It sends one request at a time and completes its promise with the
// FullHttpResponse, skipping 1xx interim responses; then it hands the connection back to its
// HttpConnectionPool, reusable only when the response allows keep-alive and was read whole.
// A malformed response, a timeout or a close before the end fails the request and closes the
// connection, so a broken connection never goes back to the pool.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>

#include <trellis/codec/http/http_message.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/promise.hpp>
#include <trellis/pipeline/scheduled_future.hpp>

namespace trellis::http {

class HttpConnectionPool;

// One request on its way: the request, the promise its response completes, and the timer of
// its request_timeout (armed when it was submitted).
struct HttpClientExchange {
  std::uint64_t id = 0;
  FullHttpRequest request;
  Promise<FullHttpResponse> promise;
  ScheduledFuture<void> timer;
};

class HttpClientHandler : public ChannelInboundHandler {
 public:
  // How long a 100-continue request waits for the interim response before sending its body.
  static constexpr std::chrono::seconds kContinueTimeout{1};

  explicit HttpClientHandler(std::weak_ptr<HttpConnectionPool> pool) : pool_(std::move(pool)) {}
  ~HttpClientHandler() override;

  void handler_added(ChannelHandlerContext& ctx) override { ctx_ = &ctx; }
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  void channel_inactive(ChannelHandlerContext& ctx) override;
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) override;

  // On the channel's loop, with no request in flight: writes the request and waits for its
  // response. A closed channel fails it at once (ConnectionClosedError, not processed).
  void send(HttpClientExchange exchange);
  // Fails the request in flight (if any) with error and closes the connection.
  void abort(std::exception_ptr error);
  // Closes the connection (a request in flight fails with ConnectionClosedError).
  void close();

  bool busy() const noexcept { return exchange_.has_value(); }
  // The id of the request in flight (0: none).
  std::uint64_t exchange_id() const noexcept { return exchange_ ? exchange_->id : 0; }
  bool is_active() const noexcept;
  Channel* channel() const noexcept;

  // The pool's bookkeeping: when the connection last went idle (the loop's clock).
  std::int64_t idle_since = 0;

 private:
  // The exchange leaves this connection: its timer is cancelled and it is returned.
  HttpClientExchange take_exchange();
  void fail(std::exception_ptr error);
  // The body held back by a 100-continue request goes now.
  void send_held_body();

  std::weak_ptr<HttpConnectionPool> pool_;
  ChannelHandlerContext* ctx_ = nullptr;
  std::optional<HttpClientExchange> exchange_;
  bool closed_ = false;             // channel_inactive seen, or the pool was told of the close
  bool reusable_ = true;            // the request in flight allows the connection to be kept
  bool awaiting_continue_ = false;  // a 100-continue request's body is held
  ByteBuf held_body_;
  ScheduledFuture<void> continue_timer_;
};

}  // namespace trellis::http
