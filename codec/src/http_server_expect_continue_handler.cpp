// Expect: 100-continue for servers (see http_server_expect_continue_handler.hpp).
#include <trellis/codec/http/http_server_expect_continue_handler.hpp>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

namespace trellis::http {

bool HttpServerExpectContinueHandler::handle_expectation(ChannelHandlerContext& ctx,
                                                         HttpVersion version,
                                                         HttpHeaders& headers) {
  auto expect = headers.get(HeaderId::kExpect);
  if (!expect) return true;
  if (version == kHttp10) {
    headers.remove(header::kExpect);
    return true;
  }
  if (iequals(*expect, "100-continue")) {
    headers.remove(header::kExpect);
    HttpResponse interim;
    interim.status.code = 100;
    ctx.write(Message(std::move(interim)));
    ctx.write_and_flush(Message(LastHttpContent{}));
    return true;
  }
  FullHttpResponse refused;
  refused.status.code = 417;
  refused.headers.add(HeaderId::kConnection, "close");
  refused.headers.add(HeaderId::kContentLength, "0");
  auto done = ctx.new_promise();
  ctx.write_and_flush(Message(std::move(refused)), done);
  done.future().add_listener([&channel = ctx.channel()](const Future<void>&) { channel.close(); });
  return false;
}

void HttpServerExpectContinueHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (discarding_) {
    if (msg.is<LastHttpContent>()) discarding_ = false;
    if (msg.is<HttpContent>() || msg.is<LastHttpContent>()) return;
  }
  if (auto* r = msg.try_get<HttpRequest>()) {
    if (!handle_expectation(ctx, r->version, r->headers)) {
      discarding_ = true;
      return;
    }
  } else if (auto* f = msg.try_get<FullHttpRequest>()) {
    if (!handle_expectation(ctx, f->version, f->headers)) return;
  }
  ctx.fire_channel_read(std::move(msg));
}

}  // namespace trellis::http
