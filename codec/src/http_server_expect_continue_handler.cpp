// Expect: 100-continue for servers (see http_server_expect_continue_handler.hpp).
#include <trellis/codec/http/http_server_expect_continue_handler.hpp>

#include <trellis/pipeline/channel_handler_context.hpp>

#include "http_expectation.hpp"

namespace trellis::http {

void HttpServerExpectContinueHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (discarding_) {
    if (msg.is<LastHttpContent>()) discarding_ = false;
    if (msg.is<HttpContent>() || msg.is<LastHttpContent>()) return;
  }
  if (auto* r = msg.try_get<HttpRequest>()) {
    if (!detail::answer_expectation(ctx, r->version, r->headers)) {
      discarding_ = true;
      return;
    }
  } else if (auto* f = msg.try_get<FullHttpRequest>()) {
    if (!detail::answer_expectation(ctx, f->version, f->headers)) return;
  }
  ctx.fire_channel_read(std::move(msg));
}

}  // namespace trellis::http
