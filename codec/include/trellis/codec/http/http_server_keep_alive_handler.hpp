// HttpServerKeepAliveHandler: persistent connections per RFC 9112 §9.3. It marks responses
// "Connection: close" when the request (or the response itself) does not allow the connection
// to persist, closes once the last such response is written, answers HTTP/1.0 keep-alive
// requests with "Connection: keep-alive", and closes a connection left idle between requests for
// idle_timeout on the loop's clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include <trellis/codec/http/http_message.hpp>
#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/scheduled_future.hpp>

namespace trellis::http {

class HttpServerKeepAliveHandler : public ChannelDuplexHandler {
 public:
  static constexpr std::chrono::seconds kDefaultIdleTimeout{60};

  explicit HttpServerKeepAliveHandler(std::chrono::nanoseconds idle_timeout = kDefaultIdleTimeout)
      : idle_timeout_(idle_timeout) {}

  void channel_active(ChannelHandlerContext& ctx) override;
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  void channel_read_complete(ChannelHandlerContext& ctx) override;
  void channel_inactive(ChannelHandlerContext& ctx) override;
  void handler_added(ChannelHandlerContext& ctx) override;
  void handler_removed(ChannelHandlerContext& ctx) override;
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;

 private:
  struct PendingRequest {
    bool keep_alive;  // the request allows the connection to persist
    bool http10;      // HTTP/1.0 with Connection: keep-alive: say so in the response
  };
  // Requests read and not yet answered in full, oldest first (pipelining): a ring that allocates
  // only when pipelining goes deeper than it ever did on this connection.
  class PendingQueue {
   public:
    bool empty() const noexcept { return size_ == 0; }
    const PendingRequest& front() const noexcept { return ring_[head_]; }
    void push_back(PendingRequest r);
    void pop_front() noexcept {
      head_ = (head_ + 1) & (ring_.size() - 1);
      --size_;
    }

   private:
    std::vector<PendingRequest> ring_;  // a power-of-two size: indexes wrap with a mask
    std::size_t head_ = 0;
    std::size_t size_ = 0;
  };

  void on_request(HttpVersion version, const HttpHeaders& headers);
  void on_response_head(HttpHeaders& headers, std::uint16_t status, bool full);
  // The idle timer is lazy (as Netty's IdleStateHandler): requests and responses only record
  // the time; the timer, when it fires, closes the connection or sleeps for the rest. A
  // response written while a batch of reads is being handled records the time once, at the
  // batch's channel_read_complete (one clock reading for all pipelined requests of a read).
  void mark_idle(ChannelHandlerContext& ctx);
  void schedule_idle_check(ChannelHandlerContext& ctx, std::chrono::nanoseconds delay);
  void on_idle_check(ChannelHandlerContext& ctx);
  void cancel_idle_timer();

  std::chrono::nanoseconds idle_timeout_;
  ScheduledFuture<void> idle_timer_;
  static constexpr std::int64_t kBusy = -1;           // a request is being answered
  static constexpr std::int64_t kIdleUnstamped = -2;  // idle since the current read batch
  std::int64_t idle_since_ = kBusy;  // loop time the connection went idle, or one of the above
  bool in_read_batch_ = false;       // between a channel_read and its channel_read_complete
  PendingQueue pending_;
  bool closing_ = false;  // the response in progress ends the connection
  bool interim_ = false;  // the head being written is a 1xx
};

}  // namespace trellis::http
