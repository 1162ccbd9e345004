// Tests of ByteToMessageDecoder: the decode loop, cumulators, decode_last, single_decode,
// leftovers on removal, error wrapping and the allocation budget of the steady state.
#include <doctest/doctest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include <trellis/codec/byte_to_message_decoder.hpp>
#include <trellis/pipeline/channel_events.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/decoder_verifier.hpp>
#include <trellis/testing/doctest_helpers.hpp>

namespace {

using trellis::ByteBuf;
using trellis::ChannelHandlerContext;
using trellis::EmbeddedChannel;
using trellis::Message;
using trellis::codec::ByteToMessageDecoder;
using trellis::codec::DecoderError;

// Frames of 4 bytes, as slices of the cumulation.
class FourBytes : public ByteToMessageDecoder {
 protected:
  void decode(ChannelHandlerContext&, ByteBuf& in, Out& out) override {
    if (in.readable_bytes() >= 4) out.emplace_back(in.read_slice(4));
  }
};

// A 1-byte length then that many bytes as a std::string; at the end of input, whatever is left
// becomes one "partial:" message.
class LengthString : public ByteToMessageDecoder {
 protected:
  void decode(ChannelHandlerContext&, ByteBuf& in, Out& out) override {
    if (!in.is_readable()) return;
    const std::size_t n = in.get_u8(in.reader_index());
    if (in.readable_bytes() < n + 1) return;
    in.skip_bytes(1);
    out.emplace_back(in.read_string(n));
  }
  void decode_last(ChannelHandlerContext&, ByteBuf& in, Out& out) override {
    if (in.is_readable()) out.emplace_back("partial:" + in.read_string(in.readable_bytes()));
  }
};

class ProducesWithoutReading : public ByteToMessageDecoder {
 protected:
  void decode(ChannelHandlerContext&, ByteBuf&, Out& out) override { out.emplace_back(1); }
};

// Decodes one byte per call, throws on 'x'.
class ThrowsOnX : public ByteToMessageDecoder {
 protected:
  void decode(ChannelHandlerContext&, ByteBuf& in, Out& out) override {
    const char c = static_cast<char>(in.read_u8());
    if (c == 'x') throw std::logic_error("bad x");
    out.emplace_back(std::string(1, c));
  }
};

// Decodes one 2-byte frame, then removes itself: the rest belongs to the next handler.
class RemovesItself : public ByteToMessageDecoder {
 protected:
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override {
    if (in.readable_bytes() < 2) return;
    out.emplace_back(in.read_slice(2));
    ctx.pipeline().remove(*this);
  }
};

}  // namespace

TEST_CASE("ByteToMessageDecoder decodes frames whatever the input split") {
  TRELLIS_CHECK_DECODER(trellis::testing::verify_frame_decoder(
      [] { return std::make_shared<FourBytes>(); }, "abcdefghijkl", {"abcd", "efgh", "ijkl"}));
}

TEST_CASE("ByteToMessageDecoder with the composite cumulator decodes the same frames") {
  auto factory = [] {
    auto d = std::make_shared<FourBytes>();
    d->set_cumulator(&trellis::codec::composite_cumulator);
    return d;
  };
  TRELLIS_CHECK_DECODER(
      trellis::testing::verify_frame_decoder(factory, "abcdefghijkl", {"abcd", "efgh", "ijkl"}));
}

TEST_CASE("ByteToMessageDecoder frames are slices of the inbound buffer (zero copy)") {
  EmbeddedChannel ch{std::make_shared<FourBytes>()};
  ByteBuf in = ByteBuf::from("abcdefgh");
  const std::byte* base = in.data();
  ch.write_inbound(std::move(in));
  auto first = ch.read_inbound<ByteBuf>();
  auto second = ch.read_inbound<ByteBuf>();
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->readable_span().data() == base);
  CHECK(second->readable_span().data() == base + 4);
  CHECK(second->to_string() == "efgh");
}

TEST_CASE("ByteToMessageDecoder keeps partial input until the rest arrives") {
  auto decoder = std::make_shared<FourBytes>();
  EmbeddedChannel ch{decoder};
  CHECK_FALSE(ch.write_inbound(ByteBuf::from("ab")));
  CHECK(decoder->actual_readable_bytes() == 2);
  CHECK(ch.write_inbound(ByteBuf::from("cdef")));
  TRELLIS_CHECK_INBOUND_STRING(ch, "abcd");
  CHECK(decoder->actual_readable_bytes() == 2);
  TRELLIS_CHECK_NO_MORE_INBOUND(ch);
}

TEST_CASE("ByteToMessageDecoder passes non-ByteBuf messages through") {
  EmbeddedChannel ch{std::make_shared<FourBytes>()};
  ch.write_inbound(std::string("hello"));
  CHECK(ch.read_inbound<std::string>() == "hello");
}

TEST_CASE("ByteToMessageDecoder runs decode_last when the channel becomes inactive") {
  trellis::testing::DecoderVerifierOptions options;
  options.close_at_end = true;
  const std::string input = std::string("\x02hi\x03you", 7) + "\x05" + "ab";
  TRELLIS_CHECK_DECODER(trellis::testing::verify_decoder<std::string>(
      [] { return std::make_shared<LengthString>(); }, input,
      {"hi", "you",
       "partial:\x05"
       "ab"},
      options));
}

TEST_CASE("ByteToMessageDecoder hands leftover bytes on when it is removed") {
  auto decoder = std::make_shared<FourBytes>();
  EmbeddedChannel ch{decoder};
  ch.write_inbound(ByteBuf::from("abcdef"));
  TRELLIS_CHECK_INBOUND_STRING(ch, "abcd");
  ch.pipeline().remove(*decoder);
  TRELLIS_CHECK_INBOUND_STRING(ch, "ef");
  ch.write_inbound(ByteBuf::from("gh"));
  TRELLIS_CHECK_INBOUND_STRING(ch, "gh");
  CHECK_FALSE(ch.finish());
}

TEST_CASE("ByteToMessageDecoder removed from inside decode passes the rest on in order") {
  EmbeddedChannel ch{std::make_shared<RemovesItself>()};
  ch.write_inbound(ByteBuf::from("abcdef"));
  TRELLIS_CHECK_INBOUND_STRING(ch, "ab");
  TRELLIS_CHECK_INBOUND_STRING(ch, "cdef");
  TRELLIS_CHECK_NO_MORE_INBOUND(ch);
}

TEST_CASE("ByteToMessageDecoder in single_decode mode decodes one message per read") {
  auto decoder = std::make_shared<FourBytes>();
  decoder->set_single_decode(true);
  CHECK(decoder->is_single_decode());
  EmbeddedChannel ch{decoder};
  ch.write_inbound(ByteBuf::from("abcdefgh"));
  TRELLIS_CHECK_INBOUND_STRING(ch, "abcd");
  TRELLIS_CHECK_NO_MORE_INBOUND(ch);
  CHECK(decoder->actual_readable_bytes() == 4);
  ch.write_inbound(ByteBuf::from("i"));
  TRELLIS_CHECK_INBOUND_STRING(ch, "efgh");
}

TEST_CASE("ByteToMessageDecoder rejects a decode that produces without reading") {
  EmbeddedChannel ch{std::make_shared<ProducesWithoutReading>()};
  CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from("a")), DecoderError);
  // The message produced is still fired, once: the loop did not spin.
  CHECK(ch.inbound_messages().size() == 1);
}

TEST_CASE(
    "ByteToMessageDecoder wraps exceptions of decode in DecoderError and fires what came "
    "before") {
  EmbeddedChannel ch{std::make_shared<ThrowsOnX>()};
  try {
    ch.write_inbound(ByteBuf::from("abxc"));
    FAIL("no exception");
  } catch (const DecoderError& e) {
    CHECK(std::string(e.what()).find("bad x") != std::string::npos);
    CHECK(e.position() == 3);
    bool nested_found = false;
    try {
      std::rethrow_if_nested(e);
    } catch (const std::logic_error& cause) {
      nested_found = std::string(cause.what()) == "bad x";
    }
    CHECK(nested_found);
  }
  CHECK(ch.read_inbound<std::string>() == "a");
  CHECK(ch.read_inbound<std::string>() == "b");
  TRELLIS_CHECK_NO_MORE_INBOUND(ch);
  // The rest of the stream is still decoded on the next read.
  ch.write_inbound(ByteBuf::from("d"));
  CHECK(ch.read_inbound<std::string>() == "c");
  CHECK(ch.read_inbound<std::string>() == "d");
}

TEST_CASE("ByteToMessageDecoder discards read bytes of a long-lived cumulation") {
  auto decoder = std::make_shared<FourBytes>();
  decoder->set_discard_after_reads(2);
  EmbeddedChannel ch{decoder};
  std::string expected;
  // Never a whole number of frames pending: the cumulation lives across all reads.
  for (int i = 0; i < 50; ++i) ch.write_inbound(ByteBuf::from("abc"));
  CHECK(ch.inbound_messages().size() == 37);
  CHECK(decoder->actual_readable_bytes() == 2);
  while (auto f = ch.read_inbound<ByteBuf>()) CHECK(f->readable_bytes() == 4);
  CHECK_THROWS_AS(decoder->set_discard_after_reads(0), trellis::InvalidArgumentError);
}

TEST_CASE("ByteToMessageDecoder allocates nothing per frame in steady state") {
  REQUIRE(trellis::testing::allocation_hook_installed());
  EmbeddedChannel ch{std::make_shared<FourBytes>()};
  std::vector<ByteBuf> inputs;
  for (int i = 0; i < 200; ++i) inputs.push_back(ByteBuf::from("abcdefghijklmnopqrstuvwxyz012345"));
  for (int i = 0; i < 100; ++i) {
    ch.write_inbound(std::move(inputs[static_cast<std::size_t>(i)]));
    ch.inbound_messages().clear();
  }
  trellis::testing::AllocationScope scope;
  for (int i = 100; i < 200; ++i) {
    ch.write_inbound(std::move(inputs[static_cast<std::size_t>(i)]));
    ch.inbound_messages().clear();
  }
  CHECK(scope.count() == 0);
}

TEST_CASE("ByteToMessageDecoder runs decode_last on ChannelInputShutdownEvent and passes it on") {
  EmbeddedChannel ch{std::make_shared<LengthString>()};
  ch.write_inbound(ByteBuf::from("\x02hi\x05x"));
  CHECK(ch.read_inbound<std::string>() == "hi");
  ch.pipeline().fire_user_event_triggered(trellis::ChannelInputShutdownEvent{});
  CHECK(ch.read_inbound<std::string>() == "partial:\x05x");
  REQUIRE(ch.user_events().size() == 1);
  CHECK(ch.user_events().front().is<trellis::ChannelInputShutdownEvent>());
  CHECK(ch.is_open());
}

TEST_CASE("ByteToMessageDecoder asks for more bytes itself when auto_read is off") {
  EmbeddedChannel::Options options;
  options.auto_read = false;
  EmbeddedChannel ch{options, std::make_shared<FourBytes>()};
  ch.config().set_max_messages_per_read(1);  // one buffer per read()
  ch.write_inbound(ByteBuf::from("ab"), ByteBuf::from("cd"), ByteBuf::from("ef"));
  ch.read();
  ch.run_pending_tasks();
  // The first buffer alone decoded nothing, so the decoder called read() for the second.
  TRELLIS_CHECK_INBOUND_STRING(ch, "abcd");
  // That read produced a frame: the decoder does not ask again; "ef" waits for a read().
  CHECK(ch.pending_inbound_messages().size() == 1);
}
