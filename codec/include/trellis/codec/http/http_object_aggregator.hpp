// HttpObjectAggregator: joins a head and its body pieces into one FullHttpRequest (server side)
// or FullHttpResponse (client side), up to max_content_length bytes. A request body over the
// limit (announced by Content-Length, or found while reading) is refused with 413 (HttpRefusal),
// then the connection closes; a response over it fails with
// TooLongFrameError. As Netty's, it answers a request's expectation itself, as
// HttpServerExpectContinueHandler does (100 Continue, 417 for an unknown one), and refuses a
// 100-continue request whose announced body is over the limit with 413 instead of inviting it.
// Memory: a body that arrives in one piece is passed on as that piece (no copy); from the second
// piece on the pieces are copied into one buffer of at most max_content_length bytes, so a body
// sent in tiny pieces (one-byte chunks, one byte per segment) never pins the receive buffers its
// pieces were sliced from: what is held is the limit plus one piece.
#pragma once

#include <cstddef>
#include <optional>

#include <trellis/codec/http/http_message.hpp>
#include <trellis/pipeline/channel_handler.hpp>

namespace trellis::http {

/// Joins a head and its body pieces into one FullHttpRequest or FullHttpResponse, up to
/// max_content_length bytes. A request over the limit is refused with 413 (an HttpRefusal:
/// answered in its turn with "Connection: close", then the connection closes); a response over
/// it raises TooLongFrameError to exception_caught. Answers a request's expectation itself (100
/// Continue, 417). On the channel's loop; not sharable.
class HttpObjectAggregator : public ChannelInboundHandler {
 public:
  /// An aggregator of bodies up to `max_content_length` bytes.
  explicit HttpObjectAggregator(std::size_t max_content_length)
      : max_content_length_(max_content_length) {}

  /// Joins the pieces of a message; a complete message (and anything not HTTP) passes on.
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  /// Drops a message half joined, then passes the event on.
  void channel_inactive(ChannelHandlerContext& ctx) override;
  /// The largest body joined.
  std::size_t max_content_length() const noexcept { return max_content_length_; }
  /// While on, a response that starts is passed on as it came (head, pieces, last piece) instead
  /// of being joined: the client's streaming requests read their bodies piece by piece. Switched
  /// between responses by the handler that knows which request the next response answers.
  void set_pass_responses(bool on) noexcept { pass_responses_ = on; }
  /// A response head arrived whose body is being joined.
  bool in_response() const noexcept { return response_.has_value(); }

 private:
  void append(ChannelHandlerContext& ctx, ByteBuf piece);
  ByteBuf take_body(ChannelHandlerContext& ctx);
  void oversized(ChannelHandlerContext& ctx);

  std::size_t max_content_length_;
  std::optional<HttpRequest> request_;
  std::optional<HttpResponse> response_;
  void reset_body() noexcept;

  ByteBuf body_;                 // the first piece as it came, or the copy of all pieces so far
  bool body_owned_ = false;      // body_ is our copy (from the second piece on)
  std::int64_t announced_ = -1;  // the head's Content-Length, to size the copy (-1: none)
  std::size_t size_ = 0;
  bool discarding_ = false;  // after an oversized message, until its last content
  bool pass_responses_ = false;
};

}  // namespace trellis::http
