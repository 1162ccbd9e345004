// Tests of WebSocketFrameEncoder and the masking functions: the bytes of each length form, an
// unmasked payload written as it is (no copy), masked frames with fresh keys that a server
// decoder reads back, control frame limits, and masking against a byte-at-a-time reference.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/codec/websocket/websocket_frame.hpp>
#include <trellis/codec/websocket/websocket_frame_decoder.hpp>
#include <trellis/codec/websocket/websocket_frame_encoder.hpp>
#include <trellis/codec/websocket/websocket_mask.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/embedded_channel.hpp>

#include "websocket_test_support.hpp"

namespace {

using trellis::ByteBuf;
using trellis::EmbeddedChannel;
using trellis::Message;
using trellis::websocket::BinaryWebSocketFrame;
using trellis::websocket::CloseWebSocketFrame;
using trellis::websocket::ContinuationWebSocketFrame;
using trellis::websocket::PingWebSocketFrame;
using trellis::websocket::TextWebSocketFrame;
using trellis::websocket::WebSocketFrameDecoder;
using trellis::websocket::WebSocketFrameEncoder;
using trellis::websocket::WebSocketMaskKey;
using trellis::websocket::WebSocketOpcode;
using trellis::websocket::WebSocketRole;

std::shared_ptr<WebSocketFrameEncoder> encoder(WebSocketRole role) {
  return std::make_shared<WebSocketFrameEncoder>(role);
}

// Everything written outbound, as one string.
std::string drain(EmbeddedChannel& ch) {
  std::string out;
  while (auto buf = ch.read_outbound<ByteBuf>()) out += buf->to_string();
  return out;
}

}  // namespace

TEST_CASE("WebSocketFrameEncoder: a server writes unmasked frames of each length form") {
  for (std::size_t n : {0u, 5u, 125u, 126u, 65535u, 65536u, 70000u}) {
    CAPTURE(n);
    EmbeddedChannel ch{encoder(WebSocketRole::kServer)};
    const std::string payload(n, 'q');
    ch.write_outbound(BinaryWebSocketFrame(ByteBuf::from(payload)));
    CHECK(drain(ch) == ws_test::server_frame(0x2, payload));
  }
}

TEST_CASE("WebSocketFrameEncoder: FIN, RSV and opcode bits") {
  EmbeddedChannel ch{encoder(WebSocketRole::kServer)};
  ch.write_outbound(TextWebSocketFrame(ByteBuf::from("ab"), false, 5));
  ch.write_outbound(ContinuationWebSocketFrame("cd"));
  ch.write_outbound(CloseWebSocketFrame(1001, "away"));
  CHECK(drain(ch) ==
        ws_test::wire({.opcode = 0x1, .payload = "ab", .fin = false, .rsv = 5, .masked = false}) +
            ws_test::server_frame(0x0, "cd") +
            ws_test::server_frame(0x8, ws_test::close_payload(1001, "away")));
}

TEST_CASE("WebSocketFrameEncoder: an unmasked payload goes out as it is, after a header buffer") {
  EmbeddedChannel ch{encoder(WebSocketRole::kServer)};
  ByteBuf payload = ByteBuf::from(std::string(1000, 'u'));
  const std::byte* bytes = payload.readable_span().data();
  ch.write_outbound(BinaryWebSocketFrame(std::move(payload)));
  auto header = ch.read_outbound<ByteBuf>();
  auto body = ch.read_outbound<ByteBuf>();
  REQUIRE(header);
  REQUIRE(body);
  CHECK(header->readable_bytes() == 4);
  CHECK(body->readable_span().data() == bytes);  // not copied
}

TEST_CASE("WebSocketFrameEncoder: a client masks every frame with a fresh key") {
  auto decoder = std::make_shared<WebSocketFrameDecoder>(WebSocketRole::kServer);
  EmbeddedChannel client{encoder(WebSocketRole::kClient)};
  EmbeddedChannel server{decoder};
  std::set<std::string> keys;
  for (std::size_t n : {0u, 10u, 256u, 257u, 5000u, 70000u}) {
    CAPTURE(n);
    std::string payload(n, 'k');
    for (std::size_t i = 0; i < n; ++i) payload[i] = static_cast<char>('a' + i % 26);
    client.write_outbound(BinaryWebSocketFrame(ByteBuf::from(payload)));
    const std::string bytes = drain(client);
    REQUIRE(bytes.size() >= 6);
    CHECK((static_cast<unsigned char>(bytes[1]) & 0x80) != 0);  // the mask bit
    const std::size_t key_at = n <= 125 ? 2 : n <= 0xffff ? 4 : 10;
    keys.insert(bytes.substr(key_at, 4));
    if (n >= 16) CHECK(bytes.find(payload.substr(0, 16)) == std::string::npos);  // masked
    // The decoder needs a limit that lets 70000 bytes in.
    if (n > 65536) continue;
    REQUIRE(server.write_inbound(ByteBuf::from(bytes)));
    auto frame = server.read_inbound<BinaryWebSocketFrame>();
    REQUIRE(frame);
    CHECK(frame->text() == payload);
  }
  CHECK(keys.size() == 6);
}

TEST_CASE("WebSocketFrameEncoder: a shared payload is not masked in place") {
  EmbeddedChannel ch{encoder(WebSocketRole::kClient)};
  ByteBuf payload = ByteBuf::from(std::string(1000, 's'));
  ByteBuf mine = payload.share();
  ch.write_outbound(BinaryWebSocketFrame(std::move(payload)));
  CHECK(mine.to_string() == std::string(1000, 's'));
  auto out = ch.read_outbound<ByteBuf>();
  REQUIRE(out);
  CHECK(out->readable_bytes() == 8 + 1000);  // header, key and the masked copy in one buffer
}

TEST_CASE("WebSocketFrameEncoder: a payload held alone is masked in place, not copied") {
  EmbeddedChannel ch{encoder(WebSocketRole::kClient)};
  ByteBuf payload = ByteBuf::from(std::string(1000, 'p'));
  const std::byte* bytes = payload.readable_span().data();
  ch.write_outbound(BinaryWebSocketFrame(std::move(payload)));
  auto header = ch.read_outbound<ByteBuf>();
  auto body = ch.read_outbound<ByteBuf>();
  REQUIRE(header);
  REQUIRE(body);
  CHECK(header->readable_bytes() == 8);
  CHECK(body->readable_span().data() == bytes);
}

TEST_CASE("WebSocketFrameEncoder: control frames over 125 bytes or not final are refused") {
  EmbeddedChannel ch{encoder(WebSocketRole::kServer)};
  CHECK_THROWS_AS(ch.write_outbound(PingWebSocketFrame(ByteBuf::from(std::string(126, 'x')))),
                  trellis::codec::EncoderError);
  CHECK_THROWS_AS(ch.write_outbound(PingWebSocketFrame(ByteBuf::from("x"), false)),
                  trellis::codec::EncoderError);
  ch.write_outbound(PingWebSocketFrame(ByteBuf::from(std::string(125, 'x'))));
  CHECK(drain(ch) == ws_test::server_frame(0x9, std::string(125, 'x')));
}

TEST_CASE("WebSocketFrameEncoder: other messages pass through") {
  EmbeddedChannel ch{encoder(WebSocketRole::kServer)};
  ch.write_outbound(ByteBuf::from("raw"));
  auto raw = ch.read_outbound<ByteBuf>();
  REQUIRE(raw);
  CHECK(raw->to_string() == "raw");
}

TEST_CASE("WebSocketFrameEncoder: encoding a warm stream allocates nothing") {
  struct Sink : trellis::ChannelOutboundHandler {
    void write(trellis::ChannelHandlerContext&, Message, trellis::ChannelPromise promise) override {
      promise.try_set_value();
    }
  };
  for (auto role : {WebSocketRole::kServer, WebSocketRole::kClient}) {
    EmbeddedChannel ch{std::make_shared<Sink>(), encoder(role)};
    std::vector<ByteBuf> payloads;
    for (int i = 0; i < 200; ++i)
      payloads.push_back(ByteBuf::from(std::string(i % 2 ? 64 : 2000, 'e')));
    for (int i = 0; i < 100; ++i) ch.write(BinaryWebSocketFrame(std::move(payloads[i])));
    ch.flush_outbound();
    trellis::testing::AllocationScope scope;
    for (int i = 100; i < 200; ++i) ch.write(BinaryWebSocketFrame(std::move(payloads[i])));
    CHECK(scope.count() == 0);
  }
}

TEST_CASE("websocket_mask matches a byte-at-a-time reference at every length and offset") {
  const WebSocketMaskKey key{std::byte{0x12}, std::byte{0x34}, std::byte{0x56}, std::byte{0x78}};
  std::vector<std::byte> data(100);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 7 + 1);
  for (std::size_t n = 0; n <= 40; ++n) {
    for (std::size_t offset = 0; offset < 8; ++offset) {
      std::vector<std::byte> masked(data.begin() + offset, data.begin() + offset + n);
      trellis::websocket::websocket_mask(masked, key);
      for (std::size_t i = 0; i < n; ++i) {
        if (masked[i] != (data[offset + i] ^ key[i % 4])) FAIL("n " << n << " byte " << i);
      }
      std::vector<std::byte> copied(n);
      trellis::websocket::websocket_mask_copy(std::span(data).subspan(offset, n), copied, key);
      CHECK(copied == masked);
    }
  }
}

TEST_CASE("next_websocket_mask_key gives keys that differ") {
  std::set<std::uint32_t> keys;
  for (int i = 0; i < 1000; ++i) {
    const auto key = trellis::websocket::next_websocket_mask_key();
    std::uint32_t k;
    std::memcpy(&k, key.data(), 4);
    keys.insert(k);
  }
  CHECK(keys.size() > 990);
}
