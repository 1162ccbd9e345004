// The code of docs/http2.md's "The codec" section (checked by docs.http2_codec_snippets), run
// against a client codec.
#include <doctest/doctest.h>

#include <trellis/codec/http2/http2_frame_codec.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

#include "http2_codec_test_support.hpp"

namespace {

// The application behind the codec: answers each request with 200 and a short body.
class HelloHandler : public trellis::ChannelInboundHandler {
 public:
  void channel_read(trellis::ChannelHandlerContext& ctx, trellis::Message msg) override {
    using namespace trellis::http2;
    auto* request = msg.try_get<Http2HeadersFrame>();
    if (request == nullptr || !request->end_stream) return;  // DATA, SETTINGS, PING, ...
    const std::uint32_t stream = request->stream_id;
    // Reusing the request's header list for the response allocates nothing once warm.
    request->headers.clear();
    request->headers.add(":status", "200");
    request->headers.add("content-type", "text/plain");
    request->end_stream = false;
    ctx.write(std::move(msg));
    Http2DataFrame body;
    body.stream_id = stream;
    body.data = trellis::ByteBuf::from("hello\n");
    body.end_stream = true;
    ctx.write_and_flush(trellis::Message(std::move(body)));  // sent as the windows allow
  }
};

void init_channel(trellis::Channel& ch) {
  using namespace trellis::http2;
  Http2FrameCodecOptions options;            // a server, with the defaults of the table below
  options.max_concurrent_streams = 250;      // SETTINGS_MAX_CONCURRENT_STREAMS
  options.connection_window_size = 1 << 20;  // announced with a WINDOW_UPDATE
  ch.pipeline().add_last("h2", std::make_shared<Http2FrameCodec>(options));
  ch.pipeline().add_last("app", std::make_shared<HelloHandler>());
}

}  // namespace

TEST_CASE("docs/http2.md: the codec section's server answers a client codec") {
  using namespace trellis;
  using namespace trellis::http2;
  EmbeddedChannel server(EmbeddedChannel::Options{.register_channel = false});
  init_channel(server);
  server.register_channel();
  auto client_codec =
      std::make_shared<Http2FrameCodec>(Http2FrameCodecOptions{.role = Http2Role::kClient});
  EmbeddedChannel client(client_codec);
  client.write_outbound(test::headers_frame(1, test::request("/hello"), true));
  for (int i = 0; i < 10; ++i) {
    ByteBuf to_server = test::take_outbound(client);
    ByteBuf to_client = test::take_outbound(server);
    if (to_server.is_readable()) server.write_inbound(std::move(to_server));
    if (to_client.is_readable()) client.write_inbound(std::move(to_client));
  }
  std::string body;
  Http2Headers response_headers;
  while (auto m = client.read_inbound()) {
    if (auto* h = m->try_get<Http2HeadersFrame>()) response_headers = std::move(h->headers);
    if (auto* d = m->try_get<Http2DataFrame>()) body += d->data.to_string();
  }
  CHECK(response_headers.get(":status") == "200");
  CHECK(body == "hello\n");
  CHECK(client_codec->stream_state(1) == Http2StreamState::kClosed);
}
