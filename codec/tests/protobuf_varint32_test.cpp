// Tests of ProtobufVarint32FrameDecoder and ProtobufVarint32LengthFieldPrepender: the varint
// boundaries (0, 127, 128, 16383, 16384, 2^21, 2^28), frames split at every byte, zero-copy
// slices, corrupt and oversized lengths, and the prepender's header next to the untouched body.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <trellis/codec/protobuf_varint32_frame_decoder.hpp>
#include <trellis/codec/protobuf_varint32_length_field_prepender.hpp>
#include <trellis/testing/decoder_verifier.hpp>
#include <trellis/testing/doctest_helpers.hpp>
#include <trellis/testing/embedded_channel.hpp>

namespace {

using trellis::ByteBuf;
using trellis::EmbeddedChannel;
using trellis::codec::DecoderError;
using trellis::codec::ProtobufVarint32FrameDecoder;
using trellis::codec::ProtobufVarint32LengthFieldPrepender;
using trellis::codec::TooLongFrameError;
using trellis::testing::verify_frame_decoder;

// The varint32 encoding of n, written out by hand (little-endian groups of 7 bits).
std::string varint(std::uint64_t n) {
  std::string out;
  do {
    std::uint8_t b = n & 0x7f;
    n >>= 7;
    if (n != 0) b |= 0x80;
    out.push_back(static_cast<char>(b));
  } while (n != 0);
  return out;
}

std::shared_ptr<ProtobufVarint32FrameDecoder> decoder(std::size_t max = 1 << 22) {
  return std::make_shared<ProtobufVarint32FrameDecoder>(max);
}

}  // namespace

TEST_CASE("varint32 boundaries: header sizes 1 to 5 bytes") {
  CHECK(varint(0) == std::string(1, '\0'));
  CHECK(varint(127) == "\x7f");
  CHECK(varint(128) == "\x80\x01");
  CHECK(varint(300) == "\xac\x02");  // protobuf's documentation example
  const std::vector<std::pair<std::uint32_t, std::size_t>> sizes = {
      {0, 1},        {127, 1},
      {128, 2},      {16383, 2},
      {16384, 3},    {(1u << 21) - 1, 3},
      {1u << 21, 4}, {(1u << 28) - 1, 4},
      {1u << 28, 5}, {0x7fffffffu, 5}};
  for (const auto& [value, size] : sizes) {
    CAPTURE(value);
    CHECK(ProtobufVarint32LengthFieldPrepender::varint32_size(value) == size);
    CHECK(varint(value).size() == size);
  }
}

TEST_CASE("ProtobufVarint32FrameDecoder: frames of 0, 1, 127, 128 bytes, split at every byte") {
  const std::string a(127, 'a');
  const std::string b(128, 'b');
  const std::string input = varint(0) + varint(1) + "x" + varint(127) + a + varint(128) + b;
  TRELLIS_CHECK_DECODER(verify_frame_decoder([] { return decoder(); }, input, {"", "x", a, b}));
}

TEST_CASE("ProtobufVarint32FrameDecoder: frames of 16383 and 16384 bytes") {
  const std::string a(16383, 'a');
  const std::string b(16384, 'b');
  EmbeddedChannel ch{decoder()};
  // Byte by byte: nothing comes out until the last byte of each frame.
  const std::string input = varint(16383) + a + varint(16384) + b;
  std::size_t frames = 0;
  for (std::size_t i = 0; i < input.size(); ++i) {
    const bool produced = ch.write_inbound(ByteBuf::from(std::string_view(&input[i], 1)));
    const bool frame_end = i + 1 == 2 + a.size() || i + 1 == input.size();
    if (produced != frame_end) FAIL("unexpected output after byte " << i);
    if (produced) ++frames;
    if (produced) ch.inbound_messages().take_front();
  }
  CHECK(frames == 2);
}

TEST_CASE("ProtobufVarint32FrameDecoder: a 2^21-byte frame (4-byte header) in pieces") {
  const std::string body(std::size_t{1} << 21, 'z');
  const std::string input = varint(body.size()) + body;
  REQUIRE(varint(body.size()).size() == 4);
  EmbeddedChannel ch{decoder()};
  std::size_t at = 0;
  while (at + 65536 < input.size()) {
    CHECK_FALSE(ch.write_inbound(ByteBuf::from(std::string_view(input).substr(at, 65536))));
    at += 65536;
  }
  REQUIRE(ch.write_inbound(ByteBuf::from(std::string_view(input).substr(at))));
  auto frame = ch.read_inbound<ByteBuf>();
  REQUIRE(frame);
  CHECK(frame->readable_bytes() == body.size());
  CHECK(frame->to_string() == body);
}

TEST_CASE("ProtobufVarint32FrameDecoder: a 2^28 length (5-byte header) waits for its body") {
  EmbeddedChannel ch{decoder(std::size_t{1} << 28)};
  const std::string header = varint(std::uint64_t{1} << 28);
  REQUIRE(header.size() == 5);
  CHECK_FALSE(ch.write_inbound(ByteBuf::from(header + std::string(1000, 'q'))));
  // Nothing consumed: the header stays with the partial body.
  auto d = std::dynamic_pointer_cast<ProtobufVarint32FrameDecoder>(ch.pipeline().first());
  CHECK(d->actual_readable_bytes() == 1005);
}

TEST_CASE("ProtobufVarint32FrameDecoder: frames are slices of the cumulation (no copy)") {
  EmbeddedChannel ch{decoder()};
  ByteBuf in = ByteBuf::from(varint(3) + "abc" + varint(2) + "de");
  const std::byte* base = in.readable_span().data();
  REQUIRE(ch.write_inbound(std::move(in)));
  auto first = ch.read_inbound<ByteBuf>();
  auto second = ch.read_inbound<ByteBuf>();
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->to_string() == "abc");
  CHECK(second->to_string() == "de");
  CHECK(first->readable_span().data() == base + 1);
  CHECK(second->readable_span().data() == base + 5);
}

TEST_CASE("ProtobufVarint32FrameDecoder: a header split from its body decodes nothing early") {
  EmbeddedChannel ch{decoder()};
  CHECK_FALSE(ch.write_inbound(ByteBuf::from("\x80")));  // half a 2-byte header
  CHECK_FALSE(ch.write_inbound(ByteBuf::from("\x01")));  // 128
  CHECK_FALSE(ch.write_inbound(ByteBuf::from(std::string(127, 'x'))));
  CHECK(ch.write_inbound(ByteBuf::from("y")));
  auto frame = ch.read_inbound<ByteBuf>();
  REQUIRE(frame);
  CHECK(frame->to_string() == std::string(127, 'x') + "y");
}

TEST_CASE("ProtobufVarint32FrameDecoder: too long frames fail fast and are skipped") {
  EmbeddedChannel ch{decoder(10)};
  SUBCASE("the whole frame in one read") {
    CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from(varint(11) + std::string(11, 'a'))),
                    TooLongFrameError);
  }
  SUBCASE("the frame over several reads") {
    CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from(varint(11) + "aaa")), TooLongFrameError);
    CHECK_FALSE(ch.write_inbound(ByteBuf::from("aaaa")));
    CHECK_FALSE(ch.write_inbound(ByteBuf::from("aaaa")));  // the 11th byte ends the frame
  }
  SUBCASE("a huge length read byte by byte") {
    const std::string header = varint(std::uint64_t{1} << 30);
    for (std::size_t i = 0; i + 1 < header.size(); ++i) {
      CHECK_FALSE(ch.write_inbound(ByteBuf::from(header.substr(i, 1))));
    }
    CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from(header.substr(header.size() - 1))),
                    TooLongFrameError);
    CHECK_FALSE(ch.write_inbound(ByteBuf::from(std::string(4096, 'a'))));
    auto d = std::dynamic_pointer_cast<ProtobufVarint32FrameDecoder>(ch.pipeline().first());
    CHECK(d->actual_readable_bytes() == 0);  // skipped, not kept
    return;
  }
  // Decoding goes on after the skipped frame; a frame of exactly the limit is fine.
  CHECK(ch.write_inbound(ByteBuf::from(varint(10) + std::string(10, 'b'))));
  auto frame = ch.read_inbound<ByteBuf>();
  REQUIRE(frame);
  CHECK(frame->to_string() == std::string(10, 'b'));
}

TEST_CASE("ProtobufVarint32FrameDecoder: corrupt lengths are DecoderErrors") {
  EmbeddedChannel ch{decoder()};
  SUBCASE("more than 5 bytes") {
    CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from("\x81\x82\x83\x84\x85\x01zz")), DecoderError);
  }
  SUBCASE("more than 5 bytes, byte by byte") {
    const std::string bad = "\xff\xff\xff\xff";
    for (const char c : bad) CHECK_FALSE(ch.write_inbound(ByteBuf::from(std::string(1, c))));
    CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from("\xff")), DecoderError);
  }
  SUBCASE("above 2^31 - 1") {
    CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from(varint(std::uint64_t{1} << 31) + "zz")),
                    DecoderError);
  }
  SUBCASE("2^32 - 1 (what a negative int32 would be)") {
    CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from(varint(0xffffffffu))), DecoderError);
  }
  // The stream cannot be resynchronised: what follows is dropped, not decoded.
  CHECK_FALSE(ch.write_inbound(ByteBuf::from(varint(2) + "ok")));
  auto d = std::dynamic_pointer_cast<ProtobufVarint32FrameDecoder>(ch.pipeline().first());
  CHECK(d->actual_readable_bytes() == 0);
}

TEST_CASE("ProtobufVarint32FrameDecoder: a limit of 0 is refused") {
  CHECK_THROWS_AS(ProtobufVarint32FrameDecoder(0), trellis::InvalidArgumentError);
}

TEST_CASE("ProtobufVarint32LengthFieldPrepender: the header, then the body untouched") {
  for (const std::size_t size : {std::size_t{0}, std::size_t{127}, std::size_t{128},
                                 std::size_t{16383}, std::size_t{16384}, std::size_t{1} << 21}) {
    CAPTURE(size);
    EmbeddedChannel ch{std::make_shared<ProtobufVarint32LengthFieldPrepender>()};
    ByteBuf body = ByteBuf::from(std::string(size, 'p'));
    const std::byte* data = body.readable_span().data();
    REQUIRE(ch.write_outbound(std::move(body)));
    auto header = ch.read_outbound<ByteBuf>();
    auto out = ch.read_outbound<ByteBuf>();
    REQUIRE(header);
    REQUIRE(out);
    CHECK(header->to_string() == varint(size));
    CHECK(out->readable_bytes() == size);
    if (size > 0) CHECK(out->readable_span().data() == data);  // the same bytes, not a copy
    CHECK_FALSE(ch.read_outbound<ByteBuf>());
  }
}

TEST_CASE("prepender and decoder round trip, split at every byte") {
  EmbeddedChannel out{std::make_shared<ProtobufVarint32LengthFieldPrepender>()};
  std::string wire;
  const std::vector<std::string> frames = {"", "one", std::string(200, 'x'), "last"};
  for (const auto& f : frames) {
    out.write_outbound(ByteBuf::from(f));
    while (auto b = out.read_outbound<ByteBuf>()) wire += b->to_string();
  }
  TRELLIS_CHECK_DECODER(verify_frame_decoder([] { return decoder(); }, wire, frames));
}

// The code of the "Varint32 framing" section of docs/codecs.md (checked by
// docs.varint_framing_snippets).
namespace docs {

void init_channel(trellis::Channel& ch) {
  using namespace trellis::codec;
  // Inbound: the frames without their header, at most 1 MiB each.
  ch.pipeline().add_last(std::make_shared<ProtobufVarint32FrameDecoder>(1 << 20));
  // Outbound: a varint header in front of each ByteBuf; the body is not copied.
  ch.pipeline().add_last(std::make_shared<ProtobufVarint32LengthFieldPrepender>());
  // ... then a handler that parses each frame (e.g. MyMessage::ParseFromArray) and writes
  // serialised replies as ByteBufs
}

}  // namespace docs

TEST_CASE("docs/codecs.md: varint32 framing") {
  auto ch = EmbeddedChannel::create(EmbeddedChannel::Options{.register_channel = false});
  docs::init_channel(*ch);
  ch->register_channel();
  REQUIRE(ch->write_inbound(ByteBuf::from("\x05hello")));
  auto frame = ch->read_inbound<ByteBuf>();
  REQUIRE(frame);
  CHECK(frame->to_string() == "hello");
  REQUIRE(ch->write_outbound(ByteBuf::from(std::string(300, 'r'))));
  auto header = ch->read_outbound<ByteBuf>();
  REQUIRE(header);
  CHECK(header->to_string() == "\xac\x02");
  CHECK_THROWS_AS(ch->write_inbound(ByteBuf::from(varint((1 << 20) + 1))), TooLongFrameError);
}
