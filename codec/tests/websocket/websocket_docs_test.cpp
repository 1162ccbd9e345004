// The code of docs/websocket.md, "Building a pipeline" (checked by the docs.websocket_snippets
// test): a server pipeline with an echo handler, driven through an embedded channel by a client
// pipeline built from the same pieces.
#include <doctest/doctest.h>

#include <cctype>
#include <memory>
#include <string>

#include <trellis/codec/websocket.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/pipeline/simple_channel_inbound_handler.hpp>
#include <trellis/testing/embedded_channel.hpp>

namespace {

using trellis::ByteBuf;
using trellis::EmbeddedChannel;

// Echoes every text message back, upper case.
class ShoutHandler
    : public trellis::SimpleChannelInboundHandler<trellis::websocket::TextWebSocketFrame> {
 protected:
  void channel_read0(trellis::ChannelHandlerContext& ctx,
                     trellis::websocket::TextWebSocketFrame& frame) override {
    std::string text = frame.text();
    for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    ctx.write_and_flush(trellis::websocket::TextWebSocketFrame(text));
  }
};

void add_websocket_server(trellis::ChannelPipeline& pipeline) {
  using namespace trellis::websocket;
  WebSocketDecoderConfig config;
  config.max_frame_payload_length = 64 * 1024;  // the defaults, written out
  config.max_message_size = 1024 * 1024;
  pipeline.add_last("ws-encoder", std::make_shared<WebSocketFrameEncoder>(WebSocketRole::kServer));
  pipeline.add_last("ws-decoder",
                    std::make_shared<WebSocketFrameDecoder>(WebSocketRole::kServer, config));
  pipeline.add_last("ws-utf8", std::make_shared<Utf8FrameValidator>());
  pipeline.add_last("ws-protocol", std::make_shared<WebSocketProtocolHandler>());
  pipeline.add_last("ws-aggregator", std::make_shared<WebSocketFrameAggregator>(1024 * 1024));
  pipeline.add_last("app", std::make_shared<ShoutHandler>());
}

void add_websocket_client(trellis::ChannelPipeline& pipeline) {
  using namespace trellis::websocket;
  WebSocketProtocolConfig protocol;
  protocol.role = WebSocketRole::kClient;
  pipeline.add_last("ws-encoder", std::make_shared<WebSocketFrameEncoder>(WebSocketRole::kClient));
  pipeline.add_last("ws-decoder", std::make_shared<WebSocketFrameDecoder>(WebSocketRole::kClient));
  pipeline.add_last("ws-utf8", std::make_shared<Utf8FrameValidator>());
  pipeline.add_last("ws-protocol", std::make_shared<WebSocketProtocolHandler>(protocol));
  pipeline.add_last("ws-aggregator", std::make_shared<WebSocketFrameAggregator>(1024 * 1024));
}

// Moves every byte written by `from` into `to`.
bool pump(EmbeddedChannel& from, EmbeddedChannel& to) {
  bool moved = false;
  while (auto buf = from.read_outbound<ByteBuf>()) {
    if (to.is_open()) to.write_inbound(std::move(*buf));
    moved = true;
  }
  return moved;
}

}  // namespace

TEST_CASE("docs/websocket.md: a server and a client pipeline talk, then close") {
  EmbeddedChannel server{};
  add_websocket_server(server.pipeline());
  EmbeddedChannel client{};
  add_websocket_client(client.pipeline());

  // A fragmented message with a ping between its fragments.
  client.write(trellis::websocket::TextWebSocketFrame(ByteBuf::from("hello, "), false));
  client.write(trellis::websocket::PingWebSocketFrame(ByteBuf::from("?")));
  client.write_and_flush(trellis::websocket::ContinuationWebSocketFrame("world"));
  pump(client, server);
  pump(server, client);  // the pong (dropped by the client's protocol handler) and the echo
  auto echo = client.read_inbound<trellis::websocket::TextWebSocketFrame>();
  REQUIRE(echo);
  CHECK(echo->text() == "HELLO, WORLD");

  // The client starts the close handshake; the server answers and closes the connection.
  client.write_and_flush(trellis::websocket::CloseWebSocketFrame(1000, "bye"));
  pump(client, server);
  CHECK_FALSE(server.is_open());
  pump(server, client);
  auto answer = client.read_inbound<trellis::websocket::CloseWebSocketFrame>();
  REQUIRE(answer);
  CHECK(answer->status_code() == 1000);
}
