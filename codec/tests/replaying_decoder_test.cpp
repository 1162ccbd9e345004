// Tests of ReplayingDecoder: a length-prefixed decoder written as if every byte were there, fed
// byte by byte, whole and split at every position (the decoder verifier); checkpoints that keep
// the header from being parsed again; abandoned attempts that drop what they produced; state
// changes as progress; the end of the input.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <trellis/codec/replaying_decoder.hpp>
#include <trellis/testing/decoder_verifier.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;
using namespace trellis::codec;
using trellis::testing::verify_frame_decoder;

// The code of the "ReplayingDecoder" section of docs/handlers.md (checked by
// docs.replaying_decoder_snippets).
namespace docs {

enum class Part { kLength, kBody };

// A 4-byte big-endian length, then that many bytes: one frame.
class LengthPrefixedDecoder : public ReplayingDecoder<Part> {
 public:
  LengthPrefixedDecoder() : ReplayingDecoder(Part::kLength) {}

 protected:
  void decode_replaying(ChannelHandlerContext&, ReplayingByteBuf& in, Out& out) override {
    if (state() == Part::kLength) {
      length_ = in.read_u32();
      checkpoint(Part::kBody);  // the length is kept: a short body does not re-read it
    }
    out.emplace_back(in.read_slice(length_));  // abandoned here until the whole body is in
    checkpoint(Part::kLength);
  }

 private:
  std::uint32_t length_ = 0;
};

}  // namespace docs

namespace {

using docs::LengthPrefixedDecoder;
using docs::Part;

// LengthPrefixedDecoder, counting the lengths it parses.
class CountingLengthPrefixedDecoder : public ReplayingDecoder<Part> {
 public:
  CountingLengthPrefixedDecoder() : ReplayingDecoder(Part::kLength) {}
  int headers_parsed = 0;
  int attempts = 0;

 protected:
  void decode_replaying(ChannelHandlerContext&, ReplayingByteBuf& in, Out& out) override {
    ++attempts;
    if (state() == Part::kLength) {
      length_ = in.read_u32();
      ++headers_parsed;
      checkpoint(Part::kBody);
    }
    out.emplace_back(in.read_slice(length_));
    checkpoint(Part::kLength);
  }

 private:
  std::uint32_t length_ = 0;
};

// The same format without a checkpoint: every attempt starts at the length again.
class StatelessLengthPrefixedDecoder : public ReplayingDecoder<> {
 public:
  int headers_parsed = 0;
  int attempts = 0;

 protected:
  void decode_replaying(ChannelHandlerContext&, ReplayingByteBuf& in, Out& out) override {
    ++attempts;
    const std::uint32_t length = in.read_u32();
    ++headers_parsed;
    out.emplace_back(in.read_slice(length));
  }
};

std::string frame(const std::string& body) {
  const auto n = static_cast<std::uint32_t>(body.size());
  std::string out;
  out += static_cast<char>(n >> 24);
  out += static_cast<char>(n >> 16);
  out += static_cast<char>(n >> 8);
  out += static_cast<char>(n);
  return out + body;
}

std::vector<trellis::testing::DecoderStep<std::string>> steps() {
  return {{frame("hello"), {"hello"}},
          {frame(""), {""}},
          {frame(std::string(300, 'x')) + frame("a"), {std::string(300, 'x'), "a"}}};
}

}  // namespace

TEST_CASE("a ReplayingDecoder with checkpoints decodes byte by byte, whole and split anywhere") {
  TRELLIS_CHECK_DECODER(
      verify_frame_decoder([] { return std::make_shared<LengthPrefixedDecoder>(); }, steps()));
}

TEST_CASE("a ReplayingDecoder without checkpoints decodes byte by byte, whole and split anywhere") {
  TRELLIS_CHECK_DECODER(verify_frame_decoder(
      [] { return std::make_shared<StatelessLengthPrefixedDecoder>(); }, steps()));
}

TEST_CASE("a checkpoint keeps the header from being parsed again as the body trickles in") {
  const std::string input = frame(std::string(100, 'b'));
  auto with = std::make_shared<CountingLengthPrefixedDecoder>();
  auto without = std::make_shared<StatelessLengthPrefixedDecoder>();
  EmbeddedChannel a{with};
  EmbeddedChannel b{without};
  for (char c : input) {
    a.write_inbound(ByteBuf::from(std::string(1, c)));
    b.write_inbound(ByteBuf::from(std::string(1, c)));
  }
  CHECK(a.read_inbound<ByteBuf>()->to_string() == std::string(100, 'b'));
  CHECK(b.read_inbound<ByteBuf>()->to_string() == std::string(100, 'b'));
  CHECK(with->headers_parsed == 1);
  // One attempt per arrival: the one that took the length in and then ran short is not followed
  // by a second on the same bytes.
  CHECK(with->attempts == static_cast<int>(input.size()));
  CHECK(without->headers_parsed == 101);  // once the length is in, then again with each body byte
}

TEST_CASE("an attempt is not repeated on the bytes it was abandoned at") {
  auto decoder = std::make_shared<CountingLengthPrefixedDecoder>();
  EmbeddedChannel ch{decoder};
  const std::string input = frame("abcdef");
  // The length and part of the body: the attempt takes the length in (a checkpoint, so bytes
  // were consumed) and runs short; the decode loop must not try the same bytes again.
  ch.write_inbound(ByteBuf::from(input.substr(0, 6)));
  CHECK(decoder->attempts == 1);
  ch.flush_inbound();  // a channel_read_complete alone brings no bytes: no attempt
  CHECK(decoder->attempts == 1);
  ch.write_inbound(ByteBuf::from(input.substr(6, 2)));
  CHECK(decoder->attempts == 2);
  ch.write_inbound(ByteBuf::from(input.substr(8)));
  CHECK(decoder->attempts == 3);
  CHECK(ch.read_inbound<ByteBuf>()->to_string() == "abcdef");
  CHECK(decoder->headers_parsed == 1);
}

TEST_CASE("messages an abandoned attempt added after the checkpoint are dropped") {
  // Emits the length as a message of its own before the body: without the rollback, a replay
  // would emit the length once per attempt.
  class HeaderThenBody : public ReplayingDecoder<> {
   protected:
    void decode_replaying(ChannelHandlerContext&, ReplayingByteBuf& in, Out& out) override {
      const std::uint32_t length = in.read_u32();
      out.emplace_back(std::to_string(length));
      out.emplace_back(in.read_slice(length).to_string());
    }
  };
  EmbeddedChannel ch{std::make_shared<HeaderThenBody>()};
  const std::string input = frame("xyz");
  for (char c : input) ch.write_inbound(ByteBuf::from(std::string(1, c)));
  REQUIRE(ch.inbound_messages().size() == 2);
  CHECK(ch.read_inbound<std::string>() == "3");
  CHECK(ch.read_inbound<std::string>() == "xyz");
}

TEST_CASE("a state change without reading counts as progress") {
  enum class Phase { kGreeting, kFrames };
  class GreetingFirst : public ReplayingDecoder<Phase> {
   public:
    GreetingFirst() : ReplayingDecoder(Phase::kGreeting) {}

   protected:
    void decode_replaying(ChannelHandlerContext&, ReplayingByteBuf& in, Out& out) override {
      if (state() == Phase::kGreeting) {
        set_state(Phase::kFrames);  // nothing read, nothing produced
        return;
      }
      out.emplace_back(in.read_slice(in.read_u8()));
      checkpoint();
    }
  };
  EmbeddedChannel ch{std::make_shared<GreetingFirst>()};
  ch.write_inbound(ByteBuf::from(std::string("\x02hi", 3)));
  auto got = ch.read_inbound<ByteBuf>();
  REQUIRE(got);
  CHECK(got->to_string() == "hi");
}

TEST_CASE("errors a ReplayingDecoder throws reach the pipeline as DecoderError") {
  class Refuses : public ReplayingDecoder<> {
   protected:
    void decode_replaying(ChannelHandlerContext&, ReplayingByteBuf& in, Out&) override {
      if (in.read_u8() == 0xff) throw std::runtime_error("bad byte");
    }
  };
  EmbeddedChannel ch{std::make_shared<Refuses>()};
  CHECK_NOTHROW(ch.write_inbound(ByteBuf::from(std::string("\x01", 1))));
  CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from(std::string("\xff", 1))), DecoderError);
}

TEST_CASE("at the end of the input an incomplete message is dropped, or given to decode_last") {
  SUBCASE("default: dropped quietly") {
    EmbeddedChannel ch{std::make_shared<LengthPrefixedDecoder>()};
    ch.write_inbound(ByteBuf::from(frame("truncated").substr(0, 7)));
    ch.close();
    CHECK_NOTHROW(ch.check_exception());
    CHECK(ch.inbound_messages().empty());
  }
  SUBCASE("decode_last_replaying sees what is left") {
    class KeepsTheRest : public StatelessLengthPrefixedDecoder {
     protected:
      void decode_last_replaying(ChannelHandlerContext&, ReplayingByteBuf& in, Out& out) override {
        out.emplace_back(std::string("rest:") + std::to_string(in.actual_readable_bytes()));
      }
    };
    EmbeddedChannel ch{std::make_shared<KeepsTheRest>()};
    ch.write_inbound(ByteBuf::from(frame("truncated").substr(0, 7)));
    ch.close();
    CHECK(ch.read_inbound<std::string>() == "rest:7");
  }
}

TEST_CASE("ReplayingByteBuf::bytes_before waits for the delimiter") {
  class Lines : public ReplayingDecoder<> {
   protected:
    void decode_replaying(ChannelHandlerContext&, ReplayingByteBuf& in, Out& out) override {
      const std::size_t n = in.bytes_before('\n');
      out.emplace_back(in.read_string(n));
      in.skip_bytes(1);
    }
  };
  TRELLIS_CHECK_DECODER(trellis::testing::verify_decoder<std::string>(
      [] { return std::make_shared<Lines>(); }, "one\ntwo\n\nthree\n",
      std::vector<std::string>{"one", "two", "", "three"}));
}
