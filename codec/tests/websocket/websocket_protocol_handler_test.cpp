// Tests of WebSocketProtocolHandler: pings answered, pongs dropped, the close handshake started by
// either side for both roles, every invalid close code answered with 1002, frames refused after a
// Close, and the close deadline in virtual time.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>

#include <trellis/codec/websocket/websocket_close_status.hpp>
#include <trellis/codec/websocket/websocket_frame.hpp>
#include <trellis/codec/websocket/websocket_protocol_handler.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/testing/embedded_channel.hpp>

#include "websocket_test_support.hpp"

namespace {

using namespace std::chrono_literals;
using trellis::ByteBuf;
using trellis::EmbeddedChannel;
using trellis::websocket::CloseWebSocketFrame;
using trellis::websocket::is_valid_close_status;
using trellis::websocket::PingWebSocketFrame;
using trellis::websocket::PongWebSocketFrame;
using trellis::websocket::TextWebSocketFrame;
using trellis::websocket::WebSocketProtocolConfig;
using trellis::websocket::WebSocketProtocolHandler;
using trellis::websocket::WebSocketRole;
namespace close_status = trellis::websocket::close_status;

std::shared_ptr<WebSocketProtocolHandler> handler(WebSocketRole role = WebSocketRole::kServer,
                                                  std::chrono::milliseconds timeout = 10s) {
  WebSocketProtocolConfig config;
  config.role = role;
  config.close_timeout = timeout;
  return std::make_shared<WebSocketProtocolHandler>(config);
}

CloseWebSocketFrame close_frame(const std::string& payload) {
  return CloseWebSocketFrame(ByteBuf::from(payload));
}

}  // namespace

TEST_CASE("WebSocketProtocolHandler: a ping is answered with its payload and not passed on") {
  EmbeddedChannel ch{handler()};
  CHECK_FALSE(ch.write_inbound(PingWebSocketFrame(ByteBuf::from("hello?"))));
  auto pong = ch.read_outbound<PongWebSocketFrame>();
  REQUIRE(pong);
  CHECK(pong->text() == "hello?");
}

TEST_CASE("WebSocketProtocolHandler: pongs are dropped unless asked for") {
  {
    EmbeddedChannel ch{handler()};
    CHECK_FALSE(ch.write_inbound(PongWebSocketFrame(ByteBuf::from("x"))));
  }
  WebSocketProtocolConfig config;
  config.drop_pong_frames = false;
  EmbeddedChannel ch{std::make_shared<WebSocketProtocolHandler>(config)};
  CHECK(ch.write_inbound(PongWebSocketFrame(ByteBuf::from("x"))));
}

TEST_CASE("is_valid_close_status: the codes RFC 6455 and the IANA registry allow on the wire") {
  int valid = 0;
  for (int code = 0; code < 70000; ++code) {
    const bool expected = (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
                          (code >= 3000 && code <= 4999);
    if (is_valid_close_status(code) != expected) FAIL("code " << code);
    valid += expected ? 1 : 0;
  }
  CHECK(valid == 4 + 8 + 2000);
}

TEST_CASE("WebSocketProtocolHandler: a server echoes a valid Close, then closes the connection") {
  for (int code : {1000, 1001, 1003, 1007, 1011, 1014, 3000, 4999}) {
    CAPTURE(code);
    EmbeddedChannel ch{handler()};
    CHECK(ch.write_inbound(
        close_frame(ws_test::close_payload(static_cast<std::uint16_t>(code), "reason"))));
    auto echo = ch.read_outbound<CloseWebSocketFrame>();
    REQUIRE(echo);
    CHECK(echo->status_code() == code);
    CHECK(echo->reason_text().empty());
    CHECK_FALSE(ch.is_open());
    // The application still sees the peer's Close.
    auto seen = ch.read_inbound<CloseWebSocketFrame>();
    REQUIRE(seen);
    CHECK(seen->reason_text() == "reason");
  }
}

TEST_CASE("WebSocketProtocolHandler: an empty Close is answered with an empty Close") {
  EmbeddedChannel ch{handler()};
  ch.write_inbound(close_frame(""));
  auto echo = ch.read_outbound<CloseWebSocketFrame>();
  REQUIRE(echo);
  CHECK(echo->payload.readable_bytes() == 0);
  CHECK_FALSE(ch.is_open());
}

TEST_CASE("WebSocketProtocolHandler: every invalid close code is answered with 1002") {
  for (int code : {0, 1, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000, 65535}) {
    CAPTURE(code);
    for (auto role : {WebSocketRole::kServer, WebSocketRole::kClient}) {
      EmbeddedChannel ch{handler(role)};
      ch.write_inbound(close_frame(ws_test::close_payload(static_cast<std::uint16_t>(code))));
      auto answer = ch.read_outbound<CloseWebSocketFrame>();
      REQUIRE(answer);
      CHECK(answer->status_code() == close_status::kProtocolError);
      CHECK_FALSE(ch.is_open());  // failed, whatever the role
    }
  }
}

TEST_CASE("WebSocketProtocolHandler: each of the 65536 codes is echoed or answered with 1002") {
  for (int code = 0; code <= 0xffff; ++code) {
    EmbeddedChannel ch{handler()};
    ch.write_inbound(close_frame(ws_test::close_payload(static_cast<std::uint16_t>(code))));
    auto answer = ch.read_outbound<CloseWebSocketFrame>();
    const int expected = is_valid_close_status(code) ? code : close_status::kProtocolError;
    if (!answer || answer->status_code() != expected || ch.is_open()) FAIL("code " << code);
  }
}

TEST_CASE("WebSocketProtocolHandler: a 1-byte close payload is answered with 1002") {
  EmbeddedChannel ch{handler()};
  ch.write_inbound(close_frame("x"));
  auto answer = ch.read_outbound<CloseWebSocketFrame>();
  REQUIRE(answer);
  CHECK(answer->status_code() == close_status::kProtocolError);
}

TEST_CASE("WebSocketProtocolHandler: a server's Close, answered, closes the connection") {
  EmbeddedChannel ch{handler()};
  ch.write_outbound(CloseWebSocketFrame(close_status::kNormalClosure, "done"));
  REQUIRE(ch.read_outbound<CloseWebSocketFrame>());
  CHECK(ch.is_open());  // waiting for the client's Close
  ch.write_inbound(close_frame(ws_test::close_payload(1000)));
  CHECK(ch.outbound_messages().empty());  // no second Close
  CHECK_FALSE(ch.is_open());
}

TEST_CASE(
    "WebSocketProtocolHandler: a client waits for the server's TCP close after the exchange") {
  EmbeddedChannel ch{handler(WebSocketRole::kClient)};
  ch.freeze_time();
  ch.write_outbound(CloseWebSocketFrame(close_status::kNormalClosure, ""));
  ch.write_inbound(close_frame(ws_test::close_payload(1000)));
  CHECK(ch.is_open());
  ch.advance_by(9999ms);
  CHECK(ch.is_open());
  ch.advance_by(1ms);  // the deadline: the server never closed
  CHECK_FALSE(ch.is_open());
}

TEST_CASE(
    "WebSocketProtocolHandler: a client echoes the server's Close and waits for its TCP close") {
  EmbeddedChannel ch{handler(WebSocketRole::kClient, 3s)};
  ch.freeze_time();
  ch.write_inbound(close_frame(ws_test::close_payload(1001)));
  auto echo = ch.read_outbound<CloseWebSocketFrame>();
  REQUIRE(echo);
  CHECK(echo->status_code() == 1001);
  CHECK(ch.is_open());
  ch.advance_by(3s);
  CHECK_FALSE(ch.is_open());
}

TEST_CASE("WebSocketProtocolHandler: a Close that is never answered times out in virtual time") {
  EmbeddedChannel ch{handler(WebSocketRole::kServer, 5s)};
  ch.freeze_time();
  ch.write_outbound(CloseWebSocketFrame(close_status::kEndpointUnavailable, "restart"));
  ch.advance_by(4999ms);
  CHECK(ch.is_open());
  ch.advance_by(1ms);
  CHECK_FALSE(ch.is_open());
}

TEST_CASE("WebSocketProtocolHandler: the deadline is cancelled when the connection closes first") {
  EmbeddedChannel ch{handler(WebSocketRole::kServer, 5s)};
  ch.freeze_time();
  ch.write_outbound(CloseWebSocketFrame(close_status::kNormalClosure, ""));
  ch.write_inbound(close_frame(ws_test::close_payload(1000)));
  CHECK_FALSE(ch.is_open());
  CHECK(ch.run_scheduled_pending_tasks() == -1);  // nothing left scheduled
}

TEST_CASE("WebSocketProtocolHandler: nothing but control frames after a Close") {
  EmbeddedChannel ch{handler()};
  ch.write_outbound(CloseWebSocketFrame(close_status::kNormalClosure, ""));
  auto text = trellis::ChannelPromise::make(&ch.event_loop());
  ch.write_and_flush(TextWebSocketFrame("late"), text);
  CHECK(text.is_done());
  CHECK_FALSE(text.is_success());
  auto second = trellis::ChannelPromise::make(&ch.event_loop());
  ch.write_and_flush(CloseWebSocketFrame(close_status::kNormalClosure, ""), second);
  CHECK(second.is_done());
  CHECK_FALSE(second.is_success());
  ch.check_exception();
  CHECK(ch.read_outbound<CloseWebSocketFrame>());
  CHECK(ch.outbound_messages().empty());
}

TEST_CASE("WebSocketProtocolHandler: data frames after the peer's Close are not passed on") {
  EmbeddedChannel ch{handler(WebSocketRole::kClient)};
  ch.write_inbound(close_frame(ws_test::close_payload(1000)));
  REQUIRE(ch.read_inbound<CloseWebSocketFrame>());
  CHECK_FALSE(ch.write_inbound(TextWebSocketFrame("after")));
}
