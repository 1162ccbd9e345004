// Tests of the encoders (MessageToByteEncoder, LengthFieldPrepender, StringEncoder) and of the
// codec combinations (ByteToMessageCodec, MessageToMessageCodec).
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <trellis/codec/byte_to_message_codec.hpp>
#include <trellis/codec/length_field_based_frame_decoder.hpp>
#include <trellis/codec/length_field_prepender.hpp>
#include <trellis/codec/message_to_byte_encoder.hpp>
#include <trellis/codec/string_codec.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/pipeline/message_to_message_codec.hpp>
#include <trellis/testing/decoder_verifier.hpp>
#include <trellis/testing/doctest_helpers.hpp>

namespace {

using trellis::ByteBuf;
using trellis::ChannelHandlerContext;
using trellis::EmbeddedChannel;
using trellis::Message;
using trellis::codec::EncoderError;
using trellis::codec::LengthFieldPrepender;

// Writes each int as 4 big-endian bytes; refuses negative ones.
class IntEncoder : public trellis::codec::MessageToByteEncoder<int> {
 protected:
  void encode(ChannelHandlerContext&, int msg, ByteBuf& out) override {
    if (msg < 0) throw std::domain_error("negative");
    out.write_i32(msg);
  }
};

// Ints as 4 big-endian bytes in both directions.
class IntCodec : public trellis::codec::ByteToMessageCodec<int> {
 protected:
  void decode(ChannelHandlerContext&, ByteBuf& in, Out& out) override {
    if (in.readable_bytes() >= 4) out.emplace_back(in.read_i32());
  }
  void encode(ChannelHandlerContext&, int msg, ByteBuf& out) override { out.write_i32(msg); }
};

// IntCodec whose decode() can let its own decoder half go, and which counts decode_last calls.
class SelfRemovingIntCodec : public trellis::codec::ByteToMessageCodec<int> {
 public:
  bool remove_on_next_decode = false;
  int decode_last_calls = 0;

 protected:
  void decode(ChannelHandlerContext&, ByteBuf& in, Out& out) override {
    if (remove_on_next_decode) {
      remove_on_next_decode = false;
      remove_inbound_handler();
      return;
    }
    if (in.readable_bytes() >= 4) out.emplace_back(in.read_i32());
  }
  void decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override {
    ++decode_last_calls;
    decode(ctx, in, out);
  }
  void encode(ChannelHandlerContext&, int msg, ByteBuf& out) override { out.write_i32(msg); }
};

// int in, its decimal std::string out; std::string out, its length as int... inverted on write.
class IntStringCodec : public trellis::MessageToMessageCodec<int, std::string> {
 protected:
  void decode(ChannelHandlerContext&, int msg, std::vector<Message>& out) override {
    out.emplace_back(std::to_string(msg));
  }
  void encode(ChannelHandlerContext&, std::string msg, std::vector<Message>& out) override {
    for (char c : msg) out.emplace_back(static_cast<int>(c - '0'));
  }
};

std::string hex(const ByteBuf& buf) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (std::byte b : buf.readable_span()) {
    const auto u = static_cast<unsigned>(b);
    s += kHex[u >> 4];
    s += kHex[u & 0xf];
  }
  return s;
}

// The header the prepender writes for a body of `body` bytes.
std::string header_for(std::shared_ptr<LengthFieldPrepender> prepender, std::size_t body) {
  EmbeddedChannel ch{std::move(prepender)};
  ch.write_outbound(ByteBuf::from(std::string(body, 'x')));
  auto header = ch.read_outbound<ByteBuf>();
  auto payload = ch.read_outbound<ByteBuf>();
  REQUIRE(header);
  REQUIRE(payload);
  CHECK(payload->readable_bytes() == body);
  return hex(*header);
}

}  // namespace

TEST_CASE("MessageToByteEncoder encodes its type and passes other messages through") {
  EmbeddedChannel ch{std::make_shared<IntEncoder>()};
  auto p = ch.new_promise();
  ch.write_and_flush(0x01020304, p);
  CHECK(p.is_success());
  auto out = ch.read_outbound<ByteBuf>();
  REQUIRE(out);
  CHECK(hex(*out) == "01020304");
  ch.write_outbound(std::string("other"));
  CHECK(ch.read_outbound<std::string>() == "other");
}

TEST_CASE("MessageToByteEncoder fails the write with EncoderError when encode throws") {
  EmbeddedChannel ch{std::make_shared<IntEncoder>()};
  auto p = ch.new_promise();
  ch.write_and_flush(-1, p);
  REQUIRE(p.is_done());
  CHECK_FALSE(p.is_success());
  CHECK_THROWS_WITH_AS(ch.write_outbound(-2), doctest::Contains("negative"), EncoderError);
  TRELLIS_CHECK_NO_MORE_OUTBOUND(ch);
}

TEST_CASE("LengthFieldPrepender writes every field length in both byte orders") {
  using std::make_shared;
  CHECK(header_for(make_shared<LengthFieldPrepender>(1), 5) == "05");
  CHECK(header_for(make_shared<LengthFieldPrepender>(2), 5) == "0005");
  CHECK(header_for(make_shared<LengthFieldPrepender>(3), 5) == "000005");
  CHECK(header_for(make_shared<LengthFieldPrepender>(4), 5) == "00000005");
  CHECK(header_for(make_shared<LengthFieldPrepender>(8), 5) == "0000000000000005");
  CHECK(header_for(make_shared<LengthFieldPrepender>(2, 0, false, std::endian::little), 258) ==
        "0201");
  CHECK(header_for(make_shared<LengthFieldPrepender>(3, 0, false, std::endian::little), 258) ==
        "020100");
  CHECK(header_for(make_shared<LengthFieldPrepender>(4, 0, false, std::endian::little), 5) ==
        "05000000");
}

TEST_CASE("LengthFieldPrepender applies the adjustment and the length field's own length") {
  using std::make_shared;
  CHECK(header_for(make_shared<LengthFieldPrepender>(2, 0, true), 5) == "0007");
  CHECK(header_for(make_shared<LengthFieldPrepender>(2, 3), 5) == "0008");
  CHECK(header_for(make_shared<LengthFieldPrepender>(2, -5), 5) == "0000");
}

TEST_CASE("LengthFieldPrepender refuses lengths that do not fit") {
  EmbeddedChannel ch{std::make_shared<LengthFieldPrepender>(1)};
  CHECK_THROWS_AS(ch.write_outbound(ByteBuf::from(std::string(256, 'x'))), EncoderError);
  EmbeddedChannel neg{std::make_shared<LengthFieldPrepender>(1, -2)};
  CHECK_THROWS_AS(neg.write_outbound(ByteBuf::from("x")), EncoderError);
  CHECK_THROWS_AS(LengthFieldPrepender(5), trellis::InvalidArgumentError);
}

TEST_CASE("LengthFieldPrepender and LengthFieldBasedFrameDecoder round-trip") {
  EmbeddedChannel out{std::make_shared<LengthFieldPrepender>(2)};
  out.write_outbound(ByteBuf::from("hello"), ByteBuf::from(""), ByteBuf::from("world!"));
  std::string wire;
  while (auto b = out.read_outbound<ByteBuf>()) wire += b->to_string();
  TRELLIS_CHECK_DECODER(trellis::testing::verify_frame_decoder(
      [] {
        return std::make_shared<trellis::codec::LengthFieldBasedFrameDecoder>(1024, 0, 2, 0, 2);
      },
      wire, {"hello", "", "world!"}));
}

TEST_CASE("StringEncoder writes strings and string_views as bytes") {
  EmbeddedChannel ch{std::make_shared<trellis::codec::StringEncoder>()};
  ch.write_outbound(std::string("abc"), std::string_view("de"), "lit", 42);
  TRELLIS_CHECK_OUTBOUND_STRING(ch, "abc");
  TRELLIS_CHECK_OUTBOUND_STRING(ch, "de");
  TRELLIS_CHECK_OUTBOUND_STRING(ch, "lit");
  CHECK(ch.read_outbound<int>() == 42);
}

TEST_CASE("StringDecoder turns each buffer into a string") {
  EmbeddedChannel ch{std::make_shared<trellis::codec::StringDecoder>()};
  ch.write_inbound(ByteBuf::from("abc"));
  CHECK(ch.read_inbound<std::string>() == "abc");
}

TEST_CASE("ByteToMessageCodec decodes inbound bytes and encodes outbound messages") {
  TRELLIS_CHECK_DECODER(
      trellis::testing::verify_decoder<int>([] { return std::make_shared<IntCodec>(); },
                                            std::string("\0\0\0\x07\0\0\x01\0", 8), {7, 256}));
  auto codec = std::make_shared<IntCodec>();
  EmbeddedChannel ch{codec};
  ch.write_outbound(9);
  auto out = ch.read_outbound<ByteBuf>();
  REQUIRE(out);
  CHECK(hex(*out) == "00000009");
  // Leftovers are handed on when the codec is removed.
  ch.write_inbound(ByteBuf::from(std::string("\0\0\0\x01\0\0", 6)));
  CHECK(ch.read_inbound<int>() == 1);
  ch.pipeline().remove(*codec);
  CHECK(hex(*ch.read_inbound<ByteBuf>()) == "0000");
}

TEST_CASE("ByteToMessageCodec's decoder half can be removed alone: its pending bytes go on") {
  auto codec = std::make_shared<IntCodec>();
  EmbeddedChannel ch{codec};
  ch.write_inbound(ByteBuf::from(std::string("\0\0\0\x02\0", 5)));
  CHECK(ch.read_inbound<int>() == 2);
  codec->remove_inbound_handler();
  CHECK(hex(*ch.read_inbound<ByteBuf>()) == "00");  // the byte it held
  ch.write_inbound(ByteBuf::from(std::string("\0\0\0\x03", 4)));
  CHECK(hex(*ch.read_inbound<ByteBuf>()) == "00000003");  // no longer decoded
  ch.write_outbound(4);
  CHECK(hex(*ch.read_outbound<ByteBuf>()) == "00000004");  // still encoded
  ch.pipeline().remove(*codec);
  TRELLIS_CHECK_NO_MORE_OUTBOUND(ch);
  ch.finish();
}

TEST_CASE("a decoder half that lets itself go while the input closes gets no decode_last") {
  auto codec = std::make_shared<SelfRemovingIntCodec>();
  EmbeddedChannel ch{codec};
  ch.write_inbound(ByteBuf::from(std::string("\0\0\0\x05\0\0", 6)));
  CHECK(ch.read_inbound<int>() == 5);
  // At channel_inactive the pending bytes are decoded once more; that decode() removes the half.
  codec->remove_on_next_decode = true;
  ch.close();
  CHECK(codec->is_inbound_handler_removed());
  // The combined handler's context is not removed, but the decoder is: no decode_last after it.
  CHECK(codec->decode_last_calls == 0);
  auto left = ch.read_inbound<ByteBuf>();
  REQUIRE(left);
  CHECK(hex(*left) == "0000");  // handed on by the removal
  TRELLIS_CHECK_NO_MORE_INBOUND(ch);
}

TEST_CASE("MessageToMessageCodec converts both directions and passes other types") {
  EmbeddedChannel ch{std::make_shared<IntStringCodec>()};
  ch.write_inbound(42, std::string("s"));
  CHECK(ch.read_inbound<std::string>() == "42");
  CHECK(ch.read_inbound<std::string>() == "s");
  ch.write_outbound(std::string("12"), 3.5);
  CHECK(ch.read_outbound<int>() == 1);
  CHECK(ch.read_outbound<int>() == 2);
  CHECK(ch.read_outbound<double>() == 3.5);
}
