// HttpServerExpectContinueHandler: answers "Expect: 100-continue" with an interim
// "100 Continue" so the client sends the body (RFC 9110 §10.1.1), and refuses any other
// expectation with 417 and Connection: close. HTTP/1.0 requests' expectations are ignored, as
// the RFC requires.
#pragma once

#include <trellis/codec/http/http_message.hpp>
#include <trellis/pipeline/channel_handler.hpp>

namespace trellis::http {

/// Answers "Expect: 100-continue" with an interim "100 Continue" and refuses any other
/// expectation with 417 (an HttpRefusal: "Connection: close", in the request's turn; that request
/// and its body are dropped). Put it after HttpServerCodec. On the channel's loop; not sharable.
class HttpServerExpectContinueHandler : public ChannelInboundHandler {
 public:
  /// Answers the expectation of a request head; passes on every other message, and the request
  /// when it may proceed.
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;

 private:
  bool discarding_ = false;
};

}  // namespace trellis::http
