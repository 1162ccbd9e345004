// HttpServerKeepAliveHandler: persistent connections per RFC 9112 §9.3. It marks responses
// "Connection: close" when the request (or the response itself) does not allow the connection
// to persist, closes once the last such response is written, and answers HTTP/1.0 keep-alive
// requests with "Connection: keep-alive". The time a connection may stay idle between requests
// is HttpServerCodec's (HttpServerTimeouts::idle_timeout), with the other read timeouts.
#pragma once

#include <cstdint>
#include <vector>

#include <trellis/codec/http/http_message.hpp>
#include <trellis/pipeline/channel_handler.hpp>

namespace trellis::http {

/// Persistent connections per RFC 9112 §9.3: marks responses "Connection: close" when the
/// request or the response does not allow the connection to persist and closes once such a
/// response is written; answers HTTP/1.0 keep-alive requests with "Connection: keep-alive". Put it
/// after HttpServerCodec. On the channel's loop; not sharable.
class HttpServerKeepAliveHandler : public ChannelDuplexHandler {
 public:
  /// Remembers whether each request allows the connection to persist, then passes it on.
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  /// Sets the Connection field of a response head; closes after the end of a response that ends
  /// the connection.
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

  PendingQueue pending_;
  bool closing_ = false;  // the response in progress ends the connection
  bool interim_ = false;  // the head being written is a 1xx
};

}  // namespace trellis::http
