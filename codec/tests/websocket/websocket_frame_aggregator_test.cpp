// Tests of WebSocketFrameAggregator: fragments joined into one frame, single frames passed on
// untouched, control frames between fragments passed on at once (and pings answered when the
// protocol handler is in the pipeline), and the 1009 limit.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include <trellis/codec/websocket/websocket_close_status.hpp>
#include <trellis/codec/websocket/websocket_frame.hpp>
#include <trellis/codec/websocket/websocket_frame_aggregator.hpp>
#include <trellis/codec/websocket/websocket_frame_decoder.hpp>
#include <trellis/codec/websocket/websocket_protocol_handler.hpp>
#include <trellis/testing/embedded_channel.hpp>

#include "websocket_test_support.hpp"

namespace {

using trellis::ByteBuf;
using trellis::EmbeddedChannel;
using trellis::websocket::BinaryWebSocketFrame;
using trellis::websocket::PingWebSocketFrame;
using trellis::websocket::PongWebSocketFrame;
using trellis::websocket::TextWebSocketFrame;
using trellis::websocket::WebSocketFrameAggregator;
using trellis::websocket::WebSocketFrameDecoder;
using trellis::websocket::WebSocketProtocolHandler;
using trellis::websocket::WebSocketRole;
namespace close_status = trellis::websocket::close_status;

std::shared_ptr<WebSocketFrameDecoder> server() {
  return std::make_shared<WebSocketFrameDecoder>(WebSocketRole::kServer);
}
std::shared_ptr<WebSocketFrameAggregator> aggregator(std::size_t max = 1 << 16) {
  return std::make_shared<WebSocketFrameAggregator>(max);
}

}  // namespace

TEST_CASE("WebSocketFrameAggregator: fragments come out as one final frame") {
  EmbeddedChannel ch{server(), aggregator()};
  CHECK_FALSE(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x1, "Hel", false))));
  CHECK_FALSE(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x0, "lo, ", false))));
  CHECK(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x0, "world"))));
  auto text = ch.read_inbound<TextWebSocketFrame>();
  REQUIRE(text);
  CHECK(text->text() == "Hello, world");
  CHECK(text->fin);
  CHECK(ch.inbound_messages().empty());
}

TEST_CASE("WebSocketFrameAggregator: a binary message keeps its type and RSV bits") {
  EmbeddedChannel ch{aggregator()};
  ch.write_inbound(BinaryWebSocketFrame(ByteBuf::from("a"), false, 4));
  ch.write_inbound(trellis::websocket::ContinuationWebSocketFrame("b", false));
  ch.write_inbound(trellis::websocket::ContinuationWebSocketFrame("c"));
  auto bin = ch.read_inbound<BinaryWebSocketFrame>();
  REQUIRE(bin);
  CHECK(bin->text() == "abc");
  CHECK(bin->rsv == 4);
}

TEST_CASE("WebSocketFrameAggregator: a one-frame message passes on untouched") {
  EmbeddedChannel ch{aggregator()};
  ByteBuf payload = ByteBuf::from("whole");
  const std::byte* bytes = payload.readable_span().data();
  ch.write_inbound(TextWebSocketFrame(std::move(payload)));
  auto text = ch.read_inbound<TextWebSocketFrame>();
  REQUIRE(text);
  CHECK(text->payload.readable_span().data() == bytes);
}

TEST_CASE("WebSocketFrameAggregator: control frames between fragments pass at once") {
  EmbeddedChannel ch{server(), aggregator()};
  CHECK_FALSE(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x1, "a", false))));
  CHECK(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x9, "ping"))));
  auto ping = ch.read_inbound<PingWebSocketFrame>();
  REQUIRE(ping);
  CHECK(ping->text() == "ping");
  CHECK(ch.write_inbound(
      ByteBuf::from(ws_test::client_frame(0xA, "pong") + ws_test::client_frame(0x0, "b"))));
  CHECK(ch.read_inbound<PongWebSocketFrame>());
  auto text = ch.read_inbound<TextWebSocketFrame>();
  REQUIRE(text);
  CHECK(text->text() == "ab");
}

TEST_CASE(
    "WebSocketFrameAggregator: pings between fragments are answered by the protocol handler") {
  EmbeddedChannel ch{server(), std::make_shared<WebSocketProtocolHandler>(), aggregator()};
  CHECK_FALSE(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x1, "a", false) +
                                             ws_test::client_frame(0x9, "are you there"))));
  auto pong = ch.read_outbound<PongWebSocketFrame>();
  REQUIRE(pong);
  CHECK(pong->text() == "are you there");
  CHECK(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x0, "b"))));
  auto text = ch.read_inbound<TextWebSocketFrame>();
  REQUIRE(text);
  CHECK(text->text() == "ab");
}

TEST_CASE("WebSocketFrameAggregator: a message over the limit fails with 1009") {
  SUBCASE("over several fragments") {
    EmbeddedChannel ch{server(), aggregator(10)};
    CHECK_FALSE(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x1, "123456", false))));
    ws_test::check_fails(ch, ws_test::client_frame(0x0, "78901"), close_status::kMessageTooBig);
  }
  SUBCASE("in one frame") {
    EmbeddedChannel ch{server(), aggregator(10)};
    ws_test::check_fails(ch, ws_test::client_frame(0x2, "12345678901"),
                         close_status::kMessageTooBig);
  }
  SUBCASE("exactly at the limit passes") {
    EmbeddedChannel ch{server(), aggregator(10)};
    CHECK_FALSE(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x1, "123456", false))));
    CHECK(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x0, "7890"))));
  }
}
