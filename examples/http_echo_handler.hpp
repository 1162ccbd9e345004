// The application handler of the HTTP echo example server: what it answers to each request.
// Kept apart from main() so tests can drive it on an EmbeddedChannel.
#pragma once

#include <string>

#include <trellis/codec/haproxy/haproxy_message.hpp>
#include <trellis/http.hpp>
#include <trellis/pipeline.hpp>

namespace examples {

using namespace trellis;
using namespace trellis::http;

// GET /plaintext -> "Hello, World!". A request with a body (Content-Length or chunked) -> the
// body back, with its Content-Type. Anything else -> the request line and headers as received,
// then, behind a load balancer speaking the PROXY protocol (--proxy-protocol), the client
// address it reported: "client-address: 192.0.2.1:56324 (PROXY protocol v2)".
// Sharable: it keeps no per-connection state.
class HttpEchoHandler : public SimpleChannelInboundHandler<FullHttpRequest> {
 public:
  bool is_sharable() const noexcept override { return true; }

 protected:
  void channel_read0(ChannelHandlerContext& ctx, FullHttpRequest& request) override {
    // Built in its message: a FullHttpResponse is ~260 bytes, not worth moving into one after.
    Message out;
    auto& response = out.emplace_for_overwrite<FullHttpResponse>();
    response.version = request.version;
    const bool has_body = request.headers.contains(HeaderId::kContentLength) ||
                          request.headers.contains(HeaderId::kTransferEncoding);
    if ((request.method == HttpMethod::kGet || request.method == HttpMethod::kHead) &&
        request.target == "/plaintext") {
      response.headers.add(HeaderId::kContentType, "text/plain");
      // The same bytes every time: one buffer per thread, shared rather than copied (as Netty
      // servers answer with a duplicate of one unreleasable buffer).
      static thread_local const ByteBuf hello = ByteBuf::from("Hello, World!");
      response.content = hello.share();
    } else if (has_body) {
      if (auto type = request.headers.get(HeaderId::kContentType)) {
        response.headers.add(HeaderId::kContentType, *type);
      }
      response.content = std::move(request.content);
    } else {
      std::string text;
      text.append(request.method.name()).append(" ").append(request.target).append(" ");
      text.append(request.version.text()).append("\n");
      for (const auto field : request.headers) {
        text.append(field.name).append(": ").append(field.value).append("\n");
      }
      if (const auto* proxied = ctx.channel().attr(codec::haproxy_message_key());
          proxied != nullptr && proxied->command == codec::HAProxyCommand::kProxy) {
        text.append("client-address: ").append(proxied->source()).append(" (PROXY protocol ");
        text.append(proxied->version == codec::HAProxyProtocolVersion::kV1 ? "v1" : "v2")
            .append(")\n");
      }
      response.headers.add(HeaderId::kContentType, "text/plain");
      response.content = ByteBuf::from(text);
    }
    // Written now, flushed once per read: pipelined requests leave in one write.
    ctx.write(std::move(out));
  }

  void channel_read_complete(ChannelHandlerContext& ctx) override {
    ctx.flush();
    ctx.fire_channel_read_complete();
  }

  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr) override { ctx.close(); }
};

// The whole server pipeline of one connection.
inline void init_http_echo_pipeline(Channel& ch, std::size_t max_body = 1 << 20,
                                    const HttpServerTimeouts& timeouts = {}) {
  static const auto echo = std::make_shared<HttpEchoHandler>();
  // The aggregator below makes every request a FullHttpRequest: bodiless ones are made so by
  // the decoder already, one message instead of a head and an empty last content.
  HttpRequestDecoderOptions decoder_options;
  decoder_options.full_bodiless_requests = true;
  ch.pipeline().add_last(
      "codec", std::make_shared<HttpServerCodec>(HttpParserLimits{}, HttpResponseEncoder::Options{},
                                                 decoder_options, timeouts));
  ch.pipeline().add_last("keep-alive", std::make_shared<HttpServerKeepAliveHandler>());
  // The aggregator answers Expect: 100-continue itself (as Netty's does), and refuses a body
  // announced over max_body with 413 before it is sent: no HttpServerExpectContinueHandler.
  ch.pipeline().add_last("aggregator", std::make_shared<HttpObjectAggregator>(max_body));
  ch.pipeline().add_last("echo", echo);
}

}  // namespace examples
