// Tests of WebSocketFrameDecoder: every length form split at every byte, masking required and
// forbidden by role, reserved opcodes, RSV bits, control frame rules, fragmentation rules, the
// 64-bit length's top bit, the frame and message limits (1009), in-place unmasking, and the
// close-and-drop behaviour after a violation.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <trellis/codec/websocket/websocket_close_status.hpp>
#include <trellis/codec/websocket/websocket_frame.hpp>
#include <trellis/codec/websocket/websocket_frame_decoder.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/decoder_verifier.hpp>
#include <trellis/testing/embedded_channel.hpp>

#include "websocket_test_support.hpp"

namespace {

using trellis::ByteBuf;
using trellis::EmbeddedChannel;
using trellis::Message;
using trellis::testing::DecoderVerifierOptions;
using trellis::testing::verify_decoder;
using trellis::websocket::CloseWebSocketFrame;
using trellis::websocket::TextWebSocketFrame;
using trellis::websocket::WebSocketDecoderConfig;
using trellis::websocket::WebSocketFrameDecoder;
using trellis::websocket::WebSocketOpcode;
using trellis::websocket::WebSocketProtocolError;
using trellis::websocket::WebSocketRole;
using ws_test::LengthForm;
using ws_test::wire;
using ws_test::WireFrame;
namespace close_status = trellis::websocket::close_status;

std::shared_ptr<WebSocketFrameDecoder> server(WebSocketDecoderConfig config = {}) {
  return std::make_shared<WebSocketFrameDecoder>(WebSocketRole::kServer, config);
}
std::shared_ptr<WebSocketFrameDecoder> client(WebSocketDecoderConfig config = {}) {
  return std::make_shared<WebSocketFrameDecoder>(WebSocketRole::kClient, config);
}

// The messages as a vector (an initializer list would copy them).
template <class... M>
std::vector<Message> frames(M&&... m) {
  std::vector<Message> v;
  (v.push_back(std::move(m)), ...);
  return v;
}

std::optional<std::string> verify(trellis::testing::DecoderFactory factory, std::string input,
                                  std::vector<Message> expected, bool split_in_two = true) {
  DecoderVerifierOptions options;
  options.split_in_two = split_in_two;
  return verify_decoder<Message>(std::move(factory), std::move(input), std::move(expected), options,
                                 ws_test::FrameEq{}, ws_test::FramePrint{});
}

}  // namespace

TEST_CASE("WebSocketFrameDecoder: masked frames of every opcode, split at every byte") {
  std::vector<Message> expected;
  expected.push_back(ws_test::frame(WebSocketOpcode::kText, "Hello"));
  expected.push_back(ws_test::frame(WebSocketOpcode::kBinary, std::string("\0\1\2\3\4", 5)));
  expected.push_back(ws_test::frame(WebSocketOpcode::kPing, "ping"));
  expected.push_back(ws_test::frame(WebSocketOpcode::kPong, ""));
  expected.push_back(ws_test::frame(WebSocketOpcode::kText, "frag", false));
  expected.push_back(ws_test::frame(WebSocketOpcode::kContinuation, "ment", false));
  expected.push_back(ws_test::frame(WebSocketOpcode::kContinuation, "ed"));
  expected.push_back(ws_test::frame(WebSocketOpcode::kClose, ws_test::close_payload(1000, "bye")));
  const std::string input = ws_test::client_frame(0x1, "Hello") +
                            ws_test::client_frame(0x2, std::string("\0\1\2\3\4", 5)) +
                            ws_test::client_frame(0x9, "ping") + ws_test::client_frame(0xA, "") +
                            ws_test::client_frame(0x1, "frag", false) +
                            ws_test::client_frame(0x0, "ment", false) +
                            ws_test::client_frame(0x0, "ed") +
                            ws_test::client_frame(0x8, ws_test::close_payload(1000, "bye"));
  TRELLIS_CHECK_DECODER(verify([] { return server(); }, input, std::move(expected)));
}

TEST_CASE("WebSocketFrameDecoder: RFC 6455 §5.7's example frames") {
  // A single-frame unmasked text message (server to client) and a masked one (client to server).
  TRELLIS_CHECK_DECODER(verify([] { return client(); }, "\x81\x05\x48\x65\x6c\x6c\x6f",
                               frames(ws_test::frame(WebSocketOpcode::kText, "Hello"))));
  TRELLIS_CHECK_DECODER(verify([] { return server(); },
                               "\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58",
                               frames(ws_test::frame(WebSocketOpcode::kText, "Hello"))));
  // A fragmented unmasked text message.
  TRELLIS_CHECK_DECODER(verify([] { return client(); }, "\x01\x03\x48\x65\x6c\x80\x02\x6c\x6f",
                               frames(ws_test::frame(WebSocketOpcode::kText, "Hel", false),
                                      ws_test::frame(WebSocketOpcode::kContinuation, "lo"))));
}

TEST_CASE("WebSocketFrameDecoder: 7-bit lengths 0, 1, 125, split at every byte") {
  for (std::size_t n : {0u, 1u, 125u}) {
    CAPTURE(n);
    const std::string payload(n, 'a');
    TRELLIS_CHECK_DECODER(verify([] { return server(); }, ws_test::client_frame(0x2, payload),
                                 frames(ws_test::frame(WebSocketOpcode::kBinary, payload))));
  }
}

TEST_CASE("WebSocketFrameDecoder: 16-bit lengths 126 and 65535") {
  for (std::size_t n : {126u, 65535u}) {
    CAPTURE(n);
    std::string payload(n, 'b');
    payload[n - 1] = 'z';
    const std::string bytes = ws_test::client_frame(0x2, payload);
    CHECK(static_cast<unsigned char>(bytes[1]) == (0x80 | 126));
    TRELLIS_CHECK_DECODER(verify([] { return server(); }, bytes,
                                 frames(ws_test::frame(WebSocketOpcode::kBinary, payload)),
                                 /*split_in_two=*/n < 1000));
  }
}

TEST_CASE("WebSocketFrameDecoder: a 64-bit length (65536) byte by byte") {
  std::string payload(65536, 'c');
  payload[0] = 'A';
  payload[65535] = 'Z';
  const std::string bytes = ws_test::client_frame(0x2, payload);
  CHECK(static_cast<unsigned char>(bytes[1]) == (0x80 | 127));
  WebSocketDecoderConfig config;
  config.max_frame_payload_length = 65536;
  TRELLIS_CHECK_DECODER(verify([config] { return server(config); }, bytes,
                               frames(ws_test::frame(WebSocketOpcode::kBinary, payload)),
                               /*split_in_two=*/false));
}

TEST_CASE("WebSocketFrameDecoder: nothing comes out before the frame's last byte") {
  EmbeddedChannel ch{server()};
  const std::string bytes = ws_test::client_frame(0x1, std::string(300, 'x'));
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const bool produced = ch.write_inbound(ByteBuf::from(std::string_view(&bytes[i], 1)));
    if (produced != (i + 1 == bytes.size())) FAIL("unexpected output after byte " << i);
  }
  auto text = ch.read_inbound<TextWebSocketFrame>();
  REQUIRE(text);
  CHECK(text->text() == std::string(300, 'x'));
  CHECK(text->fin);
}

TEST_CASE("WebSocketFrameDecoder: lengths that are not minimal are accepted") {
  const std::string payload = "short";
  const std::string input = wire({.opcode = 0x1, .payload = payload, .form = LengthForm::k16}) +
                            wire({.opcode = 0x1, .payload = payload, .form = LengthForm::k64});
  TRELLIS_CHECK_DECODER(verify([] { return server(); }, input,
                               frames(ws_test::frame(WebSocketOpcode::kText, payload),
                                      ws_test::frame(WebSocketOpcode::kText, payload))));
}

TEST_CASE("WebSocketFrameDecoder: a server requires masked frames (1002)") {
  EmbeddedChannel ch{server()};
  ws_test::check_fails(ch, ws_test::server_frame(0x1, "hi"), close_status::kProtocolError);
}

TEST_CASE("WebSocketFrameDecoder: a client refuses masked frames (1002)") {
  EmbeddedChannel ch{client()};
  ws_test::check_fails(ch, ws_test::client_frame(0x1, "hi"), close_status::kProtocolError);
}

TEST_CASE("WebSocketFrameDecoder: a client reads unmasked frames") {
  EmbeddedChannel ch{client()};
  REQUIRE(ch.write_inbound(ByteBuf::from(ws_test::server_frame(0x1, "hi"))));
  auto text = ch.read_inbound<TextWebSocketFrame>();
  REQUIRE(text);
  CHECK(text->text() == "hi");
}

TEST_CASE("WebSocketFrameDecoder: every reserved opcode is a protocol error (1002)") {
  for (std::uint8_t op : {0x3, 0x4, 0x5, 0x6, 0x7, 0xB, 0xC, 0xD, 0xE, 0xF}) {
    CAPTURE(static_cast<int>(op));
    EmbeddedChannel ch{server()};
    ws_test::check_fails(ch, ws_test::client_frame(op, "x"), close_status::kProtocolError);
  }
}

TEST_CASE("WebSocketFrameDecoder: RSV bits without an extension are a protocol error (1002)") {
  for (std::uint8_t rsv : {1, 2, 4, 7}) {
    CAPTURE(static_cast<int>(rsv));
    EmbeddedChannel ch{server()};
    ws_test::check_fails(ch, wire({.opcode = 0x1, .payload = "x", .rsv = rsv}),
                         close_status::kProtocolError);
  }
}

TEST_CASE("WebSocketFrameDecoder: RSV bits an extension uses are accepted and carried") {
  WebSocketDecoderConfig config;
  config.allowed_rsv_bits = 4;  // RSV1, as permessage-deflate uses it
  EmbeddedChannel ch{server(config)};
  REQUIRE(ch.write_inbound(ByteBuf::from(wire({.opcode = 0x1, .payload = "z", .rsv = 4}))));
  auto text = ch.read_inbound<TextWebSocketFrame>();
  REQUIRE(text);
  CHECK(text->rsv == 4);
  // RSV2 is still refused.
  ws_test::check_fails(ch, wire({.opcode = 0x1, .payload = "z", .rsv = 2}),
                       close_status::kProtocolError);
}

TEST_CASE("WebSocketFrameDecoder: control frames longer than 125 bytes are refused (1002)") {
  for (std::uint8_t op : {0x8, 0x9, 0xA}) {
    CAPTURE(static_cast<int>(op));
    EmbeddedChannel ch{server()};
    // Refused on the header alone: only its first two bytes are sent.
    ws_test::check_fails(ch, ws_test::client_frame(op, std::string(126, 'p')).substr(0, 2),
                         close_status::kProtocolError);
  }
  // 125 is fine.
  EmbeddedChannel ch{server()};
  CHECK(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x9, std::string(125, 'p')))));
}

TEST_CASE("WebSocketFrameDecoder: fragmented control frames are refused (1002)") {
  for (std::uint8_t op : {0x8, 0x9, 0xA}) {
    CAPTURE(static_cast<int>(op));
    EmbeddedChannel ch{server()};
    ws_test::check_fails(ch, ws_test::client_frame(op, "", /*fin=*/false),
                         close_status::kProtocolError);
  }
}

TEST_CASE("WebSocketFrameDecoder: continuation without a message is refused (1002)") {
  EmbeddedChannel ch{server()};
  ws_test::check_fails(ch, ws_test::client_frame(0x0, "lost"), close_status::kProtocolError);
}

TEST_CASE("WebSocketFrameDecoder: a new message inside a fragmented one is refused (1002)") {
  EmbeddedChannel ch{server()};
  CHECK(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x1, "a", false))));
  ws_test::check_fails(ch, ws_test::client_frame(0x2, "b"), close_status::kProtocolError);
}

TEST_CASE("WebSocketFrameDecoder: control frames between fragments pass") {
  const std::string input = ws_test::client_frame(0x1, "one ", false) +
                            ws_test::client_frame(0x9, "p1") +
                            ws_test::client_frame(0x0, "two ", false) +
                            ws_test::client_frame(0xA, "p2") + ws_test::client_frame(0x0, "three");
  TRELLIS_CHECK_DECODER(verify([] { return server(); }, input,
                               frames(ws_test::frame(WebSocketOpcode::kText, "one ", false),
                                      ws_test::frame(WebSocketOpcode::kPing, "p1"),
                                      ws_test::frame(WebSocketOpcode::kContinuation, "two ", false),
                                      ws_test::frame(WebSocketOpcode::kPong, "p2"),
                                      ws_test::frame(WebSocketOpcode::kContinuation, "three"))));
}

TEST_CASE("WebSocketFrameDecoder: a 64-bit length with the top bit set is refused on the header") {
  EmbeddedChannel ch{server()};
  // FIN + binary, mask bit + 127, 0x80000000'00000000, a key; no payload at all.
  const std::string header("\x82\xff\x80\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04", 14);
  ws_test::check_fails(ch, header, close_status::kProtocolError);
}

TEST_CASE(
    "WebSocketFrameDecoder: a frame above max_frame_payload_length fails on its header (1009)") {
  WebSocketDecoderConfig config;
  config.max_frame_payload_length = 1000;
  {
    EmbeddedChannel ch{server(config)};
    const std::string bytes = ws_test::client_frame(0x2, std::string(1001, 'x'));
    ws_test::check_fails(ch, bytes.substr(0, 8), close_status::kMessageTooBig);  // header only
  }
  {
    // A 2^62-byte length: refused, nothing allocated for it.
    EmbeddedChannel ch{server(config)};
    const std::string header("\x82\xff\x40\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04", 14);
    ws_test::check_fails(ch, header, close_status::kMessageTooBig);
  }
  EmbeddedChannel ch{server(config)};
  CHECK(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x2, std::string(1000, 'x')))));
}

TEST_CASE("WebSocketFrameDecoder: a fragmented message above max_message_size fails (1009)") {
  WebSocketDecoderConfig config;
  config.max_message_size = 10;
  EmbeddedChannel ch{server(config)};
  CHECK(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x1, "12345", false))));
  CHECK(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x0, "678", false))));
  // A ping in between does not count.
  CHECK(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x9, "pingpingping"))));
  // 8 + 3 = 11 > 10: refused on the header.
  ws_test::check_fails(ch, ws_test::client_frame(0x0, "901").substr(0, 6),
                       close_status::kMessageTooBig);
}

TEST_CASE("WebSocketFrameDecoder: max_message_size counts each message afresh") {
  WebSocketDecoderConfig config;
  config.max_message_size = 10;
  EmbeddedChannel ch{server(config)};
  for (int i = 0; i < 3; ++i) {
    CHECK(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x1, "12345", false))));
    CHECK(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x0, "67890"))));
  }
  CHECK(ch.inbound_messages().size() == 6);
}

TEST_CASE("WebSocketFrameDecoder: after a violation every later byte is dropped") {
  WebSocketDecoderConfig config;
  config.close_on_protocol_violation = false;
  EmbeddedChannel ch{server(config)};
  CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from(ws_test::server_frame(0x1, "unmasked"))),
                  WebSocketProtocolError);
  // Without close_on_protocol_violation: no Close frame, the channel stays open.
  CHECK(ch.outbound_messages().empty());
  CHECK(ch.is_open());
  CHECK_FALSE(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x1, "fine"))));
  CHECK(ch.inbound_messages().empty());
}

TEST_CASE("WebSocketFrameDecoder: the payload is unmasked in place when the bytes are its alone") {
  EmbeddedChannel ch{server()};
  ByteBuf in = ByteBuf::from(ws_test::client_frame(0x1, "in place"));
  const std::byte* base = in.readable_span().data();
  REQUIRE(ch.write_inbound(std::move(in)));
  auto text = ch.read_inbound<TextWebSocketFrame>();
  REQUIRE(text);
  CHECK(text->text() == "in place");
  CHECK(text->payload.readable_span().data() == base + 6);
}

TEST_CASE("WebSocketFrameDecoder: shared input bytes are not unmasked in place") {
  EmbeddedChannel ch{server()};
  const std::string bytes = ws_test::client_frame(0x1, "shared");
  ByteBuf in = ByteBuf::from(bytes);
  ByteBuf mine = in.share();
  REQUIRE(ch.write_inbound(std::move(in)));
  auto text = ch.read_inbound<TextWebSocketFrame>();
  REQUIRE(text);
  CHECK(text->text() == "shared");
  CHECK(mine.to_string() == bytes);  // the other handle still sees the masked bytes
}

TEST_CASE("WebSocketFrameDecoder: decoding a warm stream of masked frames allocates nothing") {
  struct Sink : trellis::ChannelInboundHandler {
    std::size_t frames = 0;
    void channel_read(trellis::ChannelHandlerContext&, Message) override { ++frames; }
  };
  auto sink = std::make_shared<Sink>();
  EmbeddedChannel ch{server(), sink};
  const std::string bytes = ws_test::client_frame(0x2, std::string(64, 'm')) +
                            ws_test::client_frame(0x1, std::string(200, 't'));
  std::vector<ByteBuf> inputs;
  for (int i = 0; i < 200; ++i) inputs.push_back(ByteBuf::from(bytes));
  for (int i = 0; i < 100; ++i) ch.write_inbound(std::move(inputs[i]));  // warm up
  trellis::testing::AllocationScope scope;
  for (int i = 100; i < 200; ++i) ch.write_inbound(std::move(inputs[i]));
  CHECK(scope.count() == 0);
  CHECK(sink->frames == 400);
}

TEST_CASE("WebSocketFrameDecoder: max_frame_payload_length must be in 1..2^31-1") {
  WebSocketDecoderConfig config;
  config.max_frame_payload_length = 0;
  CHECK_THROWS_AS(WebSocketFrameDecoder(WebSocketRole::kServer, config),
                  trellis::InvalidArgumentError);
  config.max_frame_payload_length = std::size_t{1} << 31;
  CHECK_THROWS_AS(WebSocketFrameDecoder(WebSocketRole::kServer, config),
                  trellis::InvalidArgumentError);
}

TEST_CASE("WebSocketFrameDecoder: bytes after the channel closed mid-read are dropped") {
  // A handler that closes the channel on the first frame, as a failed validation does.
  struct Closer : trellis::ChannelInboundHandler {
    std::size_t frames = 0;
    void channel_read(trellis::ChannelHandlerContext& ctx, Message) override {
      ++frames;
      ctx.channel().close();
    }
  };
  auto closer = std::make_shared<Closer>();
  EmbeddedChannel ch{server(), closer};
  // The second frame breaks a rule, but nobody is listening any more: no error, no Close.
  CHECK_NOTHROW(ch.write_inbound(ByteBuf::from(ws_test::client_frame(0x1, "last") +
                                               ws_test::server_frame(0x1, "unmasked") +
                                               ws_test::client_frame(0x1, "more"))));
  CHECK(closer->frames == 1);
  CHECK(ch.outbound_messages().empty());
}
