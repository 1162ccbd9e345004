// HttpClientHandler: the last handler of a client connection (behind HttpClientCodec and
// HttpObjectAggregator). It sends requests and completes their promises with the responses, in
// order, skipping 1xx interim responses: one request at a time, or up to the pool's pipelining
// depth. A response is whole (FullHttpResponse) or, for a streaming request, a head whose body
// goes to an HttpBodyStream as it arrives (the aggregator lets that response through in pieces).
// After each response it tells its HttpConnectionPool, which reuses the connection only when the
// response allows keep-alive and was read whole. A malformed response, a timeout or a close
// before the end fails the requests in flight and closes the connection, so a broken connection
// never goes back to the pool.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>

#include <trellis/codec/http/http_body_stream.hpp>
#include <trellis/codec/http/http_message.hpp>
#include <trellis/codec/http/streaming_http_response.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/detail/ring_buffer.hpp>
#include <trellis/pipeline/promise.hpp>
#include <trellis/pipeline/scheduled_future.hpp>

namespace trellis::http {

class HttpConnectionPool;
class HttpObjectAggregator;
class HttpClientCodec;

/// One request on its way: the request, the promise its response completes, and the timer of
/// its request_timeout (armed when it was submitted).
/// Internal: made by HttpConnectionPool, used on the connection's loop.
struct HttpClientExchange {
  /// An exchange of request r, completing p.
  HttpClientExchange(FullHttpRequest r, Promise<FullHttpResponse> p)
      : request(std::move(r)), promise(std::move(p)) {}

  std::uint64_t id = 0;               ///< The pool's id of the request.
  FullHttpRequest request;            ///< The request (moved out when it is written).
  Promise<FullHttpResponse> promise;  ///< Completed with the whole response.
  ScheduledFuture<void> timer;        ///< The request_timeout timer.
  /// A streaming request: the head completes stream_promise, the body goes to stream. (Optional:
  /// a promise allocates its state, and most requests are not streaming.)
  bool streaming = false;
  /// Completed with the head of a streaming request's response.
  std::optional<Promise<StreamingHttpResponse>> stream_promise;
  /// The body of a streaming request's response, once its head arrived.
  std::shared_ptr<HttpBodyStream> stream;
  /// A copy of the request kept to send it again on a fresh connection if the reused one turns
  /// out to be stale (an idempotent request whose first attempt is on a reused connection).
  std::optional<FullHttpRequest> retry_copy;
  bool retried = false;  ///< this is the second attempt

  /// Fails whichever promise (or body stream) this exchange completes.
  void fail(std::exception_ptr error);
};

/// The last handler of a client connection made by HttpConnectionPool (behind HttpClientCodec
/// and HttpObjectAggregator): it sends requests and completes their promises with the responses
/// in order, one at a time or pipelined. Internal to the pool and the client; every member must
/// be called on the channel's loop. A malformed response, a timeout or a close before the end
/// fails the requests in flight (ConnectionClosedError, TimeoutError, DecoderError) and closes
/// the connection.
class HttpClientHandler : public ChannelInboundHandler {
 public:
  /// How long a 100-continue request waits for the interim response before sending its body.
  static constexpr std::chrono::seconds kContinueTimeout{1};

  /// A handler that reports to pool (which may be gone). A response whose bytes stop arriving
  /// for read_timeout (0: no limit) while it is awaited fails with TimeoutError (phase kRead)
  /// and closes the connection.
  explicit HttpClientHandler(std::weak_ptr<HttpConnectionPool> pool,
                             std::chrono::nanoseconds read_timeout = {})
      : pool_(std::move(pool)), read_timeout_(read_timeout) {}
  /// Fails what is still in flight.
  ~HttpClientHandler() override;

  /// @name Handler callbacks
  ///@{

  /// Responses complete the requests in flight; a close or an error fails them.
  void handler_added(ChannelHandlerContext& ctx) override;
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  void channel_read_complete(ChannelHandlerContext& ctx) override;
  void channel_inactive(ChannelHandlerContext& ctx) override;
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) override;
  ///@}

  /// On the channel's loop: writes the request and queues it for its response (behind the
  /// requests already in flight, when pipelining). A closed channel fails it at once
  /// (ConnectionClosedError, not processed).
  void send(HttpClientExchange exchange);
  /// Fails the request id with error, the others in flight (pipelined) with
  /// ConnectionClosedError, and closes the connection.
  void abort(std::uint64_t id, std::exception_ptr error);
  /// Closes the connection (requests in flight fail with ConnectionClosedError).
  void close();

  /// True while a request is in flight.
  bool busy() const noexcept { return !in_flight_.empty(); }
  /// The number of requests in flight.
  std::size_t in_flight() const noexcept { return in_flight_.size(); }
  /// Whether one more request may be pipelined behind those in flight (depth: the pool's
  /// pipelining depth; never behind a streaming, 100-continue or last request).
  bool can_pipeline(std::size_t depth) const noexcept;
  /// Whether the request with this id is in flight here.
  bool carries(std::uint64_t id) const noexcept;
  /// True while the connection is open.
  bool is_active() const noexcept;
  /// True while the connection may carry a new request: it is open and no byte arrived since
  /// the last response ended (bytes that answer no request poison the connection: they would be
  /// read as the response to the next one).
  bool usable() const noexcept;
  /// The connection (null before handler_added).
  Channel* channel() const noexcept;

  /// Whether a response was read to the end on this connection: a request sent on it now goes
  /// on a reused connection, which may turn out stale.
  bool reused() const noexcept { return completed_ > 0; }

  /// The pool's bookkeeping: when the connection last went idle (the loop's clock).
  std::int64_t idle_since = 0;

 private:
  // The front exchange leaves this connection: its timer is cancelled and it is returned.
  HttpClientExchange take_front();
  void on_full_response(ChannelHandlerContext& ctx, FullHttpResponse response);
  void on_head(HttpResponse head);
  void on_last(ChannelHandlerContext& ctx, ByteBuf content);
  // The front exchange's response is complete: hand the connection back, then the result.
  void finish_front(ChannelHandlerContext& ctx, bool keep_alive);
  void fail_all(std::exception_ptr front_error);
  // No byte of a response arrived since the last one ended, on a connection that carried one:
  // the server closed it while idle.
  bool stale() const noexcept;
  // The aggregator lets the next response through in pieces when it belongs to a streaming
  // request.
  void update_aggregation();
  // The body held back by a 100-continue request goes now.
  void send_held_body();
  // Bytes arrived that belong to no request sent (nothing in flight).
  bool unsolicited_bytes() const noexcept;
  // HttpClientOptions::read_timeout: armed while a request is in flight.
  void arm_read_timer();
  void on_read_timer();

  std::weak_ptr<HttpConnectionPool> pool_;
  ChannelHandlerContext* ctx_ = nullptr;
  HttpObjectAggregator* aggregator_ = nullptr;
  HttpClientCodec* codec_ = nullptr;
  // Bytes of the stream taken by the responses so far: codec_->inbound_bytes() when the last
  // response ended, less the bytes that followed it in the same read.
  std::uint64_t inbound_mark_ = 0;
  // In the order of their responses; a ring, not a deque: a deque of exchanges this size takes
  // and frees a block for every request.
  trellis::detail::RingBuffer<HttpClientExchange> in_flight_;
  std::uint64_t completed_ = 0;     // responses read to the end
  bool closed_ = false;             // channel_inactive seen, or the pool was told of the close
  bool reusable_ = true;            // the requests so far allow the connection to be kept
  bool server_closing_ = false;     // a response said Connection: close
  bool response_started_ = false;   // a byte of the front exchange's response arrived
  bool interim_ = false;            // in a 1xx response let through in pieces
  bool awaiting_continue_ = false;  // a 100-continue request's body is held
  ByteBuf held_body_;
  ScheduledFuture<void> continue_timer_;
  std::chrono::nanoseconds read_timeout_{0};  // 0: none
  std::int64_t last_read_ = 0;                // the loop's clock at the last read in flight
  bool read_timer_armed_ = false;
  ScheduledFuture<void> read_timer_;
};

}  // namespace trellis::http
