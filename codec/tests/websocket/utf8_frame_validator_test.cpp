// Tests of Utf8Validator and Utf8FrameValidator: valid and invalid UTF-8 (overlong forms,
// surrogates, code points above U+10FFFF, truncated sequences), a text message split into two
// fragments at every byte position (1007 at the fragment holding the first invalid byte), and
// close reasons.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <trellis/codec/websocket/utf8_frame_validator.hpp>
#include <trellis/codec/websocket/websocket_close_status.hpp>
#include <trellis/codec/websocket/websocket_frame.hpp>
#include <trellis/codec/websocket/websocket_frame_decoder.hpp>
#include <trellis/codec/websocket/websocket_protocol_error.hpp>
#include <trellis/testing/embedded_channel.hpp>

#include "websocket_test_support.hpp"

namespace {

using trellis::ByteBuf;
using trellis::EmbeddedChannel;
using trellis::websocket::BinaryWebSocketFrame;
using trellis::websocket::CloseWebSocketFrame;
using trellis::websocket::ContinuationWebSocketFrame;
using trellis::websocket::TextWebSocketFrame;
using trellis::websocket::Utf8FrameValidator;
using trellis::websocket::Utf8Validator;
using trellis::websocket::WebSocketFrameDecoder;
using trellis::websocket::WebSocketProtocolError;
using trellis::websocket::WebSocketRole;
namespace close_status = trellis::websocket::close_status;

std::span<const std::byte> bytes(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

bool valid(const std::string& s) {
  Utf8Validator v;
  return v.feed(bytes(s)) == s.size() && v.complete();
}

// "κόσμε", then valid sequences of each length and the boundaries of the ranges.
const std::vector<std::string> kValid = {
    "",
    "plain ASCII text that is longer than eight bytes",
    "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5",
    "\x7f",
    "\xc2\x80",
    "\xdf\xbf",
    "\xe0\xa0\x80",
    "\xed\x9f\xbf",  // U+D7FF, just below the surrogates
    "\xee\x80\x80",  // U+E000, just above
    "\xef\xbf\xbf",
    "\xf0\x90\x80\x80",
    "\xf4\x8f\xbf\xbf",  // U+10FFFF
};

// Each with the offset of the first byte that makes it invalid.
const std::vector<std::pair<std::string, std::size_t>> kInvalid = {
    {"\x80", 0},              // a lone continuation byte
    {"ab\xc0\xaf", 2},        // overlong '/'
    {"\xc1\xbf", 0},          // overlong
    {"\xe0\x9f\xbf", 1},      // overlong 3-byte form
    {"\xed\xa0\x80", 1},      // U+D800, a surrogate
    {"\xed\xbf\xbf", 1},      // U+DFFF
    {"\xf0\x8f\xbf\xbf", 1},  // overlong 4-byte form
    {"\xf4\x90\x80\x80", 1},  // U+110000
    {"\xf5\x80\x80\x80", 0},  // no such lead byte
    {"\xff", 0},
    {"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80"
     "edited",
     12},             // Autobahn 6.4.x
    {"\xc2\x41", 1},  // a lead byte without its continuation
};

std::shared_ptr<WebSocketFrameDecoder> server() {
  return std::make_shared<WebSocketFrameDecoder>(WebSocketRole::kServer);
}

}  // namespace

TEST_CASE("Utf8Validator: valid sequences and range boundaries") {
  for (const auto& s : kValid) {
    CAPTURE(s);
    CHECK(valid(s));
  }
}

TEST_CASE("Utf8Validator: fails at the first invalid byte") {
  for (const auto& [s, at] : kInvalid) {
    CAPTURE(s);
    Utf8Validator v;
    CHECK(v.feed(bytes(s)) == at);
    CHECK(v.failed());
  }
}

TEST_CASE("Utf8Validator: a sequence fed one byte at a time") {
  const std::string s = "a\xf0\x9f\x98\x80z\xe2\x82\xac";
  Utf8Validator v;
  for (char c : s) {
    CHECK(v.feed(bytes(std::string(1, c))) == 1);
  }
  CHECK(v.complete());
  Utf8Validator truncated;
  CHECK(truncated.feed(bytes(s.substr(0, 3))) == 3);
  CHECK_FALSE(truncated.complete());
  CHECK_FALSE(truncated.failed());
}

TEST_CASE("Utf8FrameValidator: a valid text split into two fragments at every byte passes") {
  const std::string text = "caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x82\xac!";
  for (std::size_t split = 0; split <= text.size(); ++split) {
    CAPTURE(split);
    EmbeddedChannel ch{server(), std::make_shared<Utf8FrameValidator>()};
    ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x1, text.substr(0, split), false) +
                                   ws_test::client_frame(0x0, text.substr(split))));
    auto first = ch.read_inbound<TextWebSocketFrame>();
    auto second = ch.read_inbound<ContinuationWebSocketFrame>();
    REQUIRE(first);
    REQUIRE(second);
    CHECK(first->text() + second->text() == text);
  }
}

TEST_CASE("Utf8FrameValidator: invalid UTF-8 split at every byte position fails with 1007") {
  for (const auto& [text, bad] : kInvalid) {
    for (std::size_t split = 0; split <= text.size(); ++split) {
      CAPTURE(text);
      CAPTURE(split);
      EmbeddedChannel ch{server(), std::make_shared<Utf8FrameValidator>()};
      // The first fragment alone: it fails only if it holds the first invalid byte.
      const bool first_fails = bad < split;
      const std::string first = ws_test::client_frame(0x1, text.substr(0, split), false);
      if (first_fails) {
        ws_test::check_fails(ch, first, close_status::kInvalidPayloadData);
        continue;
      }
      CHECK(ch.write_inbound(ByteBuf::from(first)));
      ws_test::check_fails(ch, ws_test::client_frame(0x0, text.substr(split)),
                           close_status::kInvalidPayloadData);
    }
  }
}

TEST_CASE("Utf8FrameValidator: a text ending inside a character fails at its last fragment") {
  EmbeddedChannel ch{server(), std::make_shared<Utf8FrameValidator>()};
  CHECK(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x1, "ok \xe2\x82", false))));
  ws_test::check_fails(ch, ws_test::client_frame(0x0, ""), close_status::kInvalidPayloadData);
}

TEST_CASE("Utf8FrameValidator: binary messages and their fragments are not checked") {
  EmbeddedChannel ch{server(), std::make_shared<Utf8FrameValidator>()};
  CHECK(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x2, "\xff\xfe", false) +
                                       ws_test::client_frame(0x0, "\xc0"))));
  CHECK(ch.read_inbound<BinaryWebSocketFrame>());
  CHECK(ch.read_inbound<ContinuationWebSocketFrame>());
}

TEST_CASE("Utf8FrameValidator: close reasons are checked") {
  {
    EmbeddedChannel ch{server(), std::make_shared<Utf8FrameValidator>()};
    CHECK(ch.write_inbound(
        ByteBuf::from(ws_test::client_frame(0x8, ws_test::close_payload(1000, "fin \xc3\xa9")))));
    auto close = ch.read_inbound<CloseWebSocketFrame>();
    REQUIRE(close);
    CHECK(close->reason_text() == "fin \xc3\xa9");
  }
  EmbeddedChannel ch{server(), std::make_shared<Utf8FrameValidator>()};
  ws_test::check_fails(ch, ws_test::client_frame(0x8, ws_test::close_payload(1000, "\xc3")),
                       close_status::kInvalidPayloadData);
}

TEST_CASE("Utf8FrameValidator: frames after a failure are dropped") {
  EmbeddedChannel ch{server(), std::make_shared<Utf8FrameValidator>(false)};
  CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x1, "\xff"))),
                  WebSocketProtocolError);
  CHECK(ch.outbound_messages().empty());  // not asked to close
  CHECK_FALSE(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x1, "fine"))));
}
