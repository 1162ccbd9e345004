// Tests of the frame decoders against Netty's documented behaviour: every
// LengthFieldBasedFrameDecoder javadoc example (split at every byte by the verifier), lines with
// "\n" and "\r\n", delimiters, fixed lengths, limits with and without fail_fast, and the
// work of a search staying linear when a frame trickles in.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include <trellis/codec/delimiter_based_frame_decoder.hpp>
#include <trellis/codec/fixed_length_frame_decoder.hpp>
#include <trellis/codec/length_field_based_frame_decoder.hpp>
#include <trellis/codec/line_based_frame_decoder.hpp>
#include <trellis/codec/string_codec.hpp>
#include <trellis/testing/decoder_verifier.hpp>
#include <trellis/testing/doctest_helpers.hpp>

namespace trellis::codec {
// Reads the search counters of the decoders (which befriend it for these tests).
struct FrameScanProbe {
  static std::uint64_t examined(const LineBasedFrameDecoder& d) { return d.bytes_examined_; }
  static std::uint64_t examined(const DelimiterBasedFrameDecoder& d) {
    return d.bytes_examined_ + (d.line_decoder_ ? d.line_decoder_->bytes_examined_ : 0);
  }
};
}  // namespace trellis::codec

namespace {

using trellis::ByteBuf;
using trellis::EmbeddedChannel;
using trellis::codec::DecoderError;
using trellis::codec::DelimiterBasedFrameDecoder;
using trellis::codec::FixedLengthFrameDecoder;
using trellis::codec::FrameScanProbe;
using trellis::codec::LengthFieldBasedFrameDecoder;
using trellis::codec::LineBasedFrameDecoder;
using trellis::codec::TooLongFrameError;
using trellis::testing::verify_frame_decoder;

std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s += static_cast<char>(v);
  return s;
}

template <class D, class... Args>
trellis::testing::DecoderFactory make(Args... args) {
  return [=] { return std::make_shared<D>(args...); };
}

const std::string kHello = "HELLO, WORLD";

// Feeds input to ch one byte per read.
void trickle(EmbeddedChannel& ch, std::string_view input) {
  for (const char c : input) ch.write_inbound(ByteBuf::from(std::string_view(&c, 1)));
}

// The next inbound frame, or "<none>" (a helper so that a 64 KiB mismatch is not printed).
std::string next_frame(EmbeddedChannel& ch) {
  auto frame = ch.read_inbound<ByteBuf>();
  return frame ? frame->to_string() : "<none>";
}

}  // namespace

// --- LengthFieldBasedFrameDecoder: the javadoc examples ---------------------------------------

TEST_CASE("LengthFieldBasedFrameDecoder javadoc: 2 bytes length field at offset 0, no strip") {
  const std::string frame = bytes({0x00, 0x0C}) + kHello;
  TRELLIS_CHECK_DECODER(
      verify_frame_decoder(make<LengthFieldBasedFrameDecoder>(1024, 0, 2, 0, 0), frame, {frame}));
}

TEST_CASE("LengthFieldBasedFrameDecoder javadoc: 2 bytes length field at offset 0, strip header") {
  TRELLIS_CHECK_DECODER(verify_frame_decoder(make<LengthFieldBasedFrameDecoder>(1024, 0, 2, 0, 2),
                                             bytes({0x00, 0x0C}) + kHello, {kHello}));
}

TEST_CASE("LengthFieldBasedFrameDecoder javadoc: length field is the whole message length") {
  const std::string frame = bytes({0x00, 0x0E}) + kHello;
  TRELLIS_CHECK_DECODER(
      verify_frame_decoder(make<LengthFieldBasedFrameDecoder>(1024, 0, 2, -2, 0), frame, {frame}));
}

TEST_CASE(
    "LengthFieldBasedFrameDecoder javadoc: 3 bytes length field at the end of a 5 byte "
    "header") {
  const std::string frame = bytes({0xCA, 0xFE, 0x00, 0x00, 0x0C}) + kHello;
  TRELLIS_CHECK_DECODER(
      verify_frame_decoder(make<LengthFieldBasedFrameDecoder>(1024, 2, 3, 0, 0), frame, {frame}));
}

TEST_CASE(
    "LengthFieldBasedFrameDecoder javadoc: 3 bytes length field at the start of a 5 byte "
    "header") {
  const std::string frame = bytes({0x00, 0x00, 0x0C, 0xCA, 0xFE}) + kHello;
  TRELLIS_CHECK_DECODER(
      verify_frame_decoder(make<LengthFieldBasedFrameDecoder>(1024, 0, 3, 2, 0), frame, {frame}));
}

TEST_CASE(
    "LengthFieldBasedFrameDecoder javadoc: 2 bytes length field at offset 1 in the middle "
    "of a 4 byte header, strip first header field and the length field") {
  TRELLIS_CHECK_DECODER(verify_frame_decoder(make<LengthFieldBasedFrameDecoder>(1024, 1, 2, 1, 3),
                                             bytes({0xCA, 0x00, 0x0C, 0xFE}) + kHello,
                                             {bytes({0xFE}) + kHello}));
}

TEST_CASE(
    "LengthFieldBasedFrameDecoder javadoc: 2 bytes length field at offset 1 in the middle "
    "of a 4 byte header, strip first header field and the length field, the length field "
    "represents the length of the whole message") {
  TRELLIS_CHECK_DECODER(verify_frame_decoder(make<LengthFieldBasedFrameDecoder>(1024, 1, 2, -3, 3),
                                             bytes({0xCA, 0x00, 0x10, 0xFE}) + kHello,
                                             {bytes({0xFE}) + kHello}));
}

// --- LengthFieldBasedFrameDecoder: more ----------------------------------------------------------

TEST_CASE("LengthFieldBasedFrameDecoder decodes back-to-back frames of every field length") {
  for (std::size_t len : {1, 2, 3, 4, 8}) {
    CAPTURE(len);
    std::string input;
    for (const std::string body : {"a", "", "xyz"}) {
      input += std::string(len - 1, '\0') + static_cast<char>(body.size()) + body;
    }
    TRELLIS_CHECK_DECODER(verify_frame_decoder(
        make<LengthFieldBasedFrameDecoder>(64, 0, len, 0, len), input, {"a", "", "xyz"}));
  }
}

TEST_CASE("LengthFieldBasedFrameDecoder reads little-endian length fields") {
  TRELLIS_CHECK_DECODER(verify_frame_decoder(
      make<LengthFieldBasedFrameDecoder>(1024, 0, 4, 0, 4, true, std::endian::little),
      bytes({3, 0, 0, 0}) + "abc" + bytes({0x01, 0x01, 0, 0}) + std::string(257, 'z'),
      {"abc", std::string(257, 'z')}));
}

TEST_CASE("LengthFieldBasedFrameDecoder rejects invalid arguments") {
  CHECK_THROWS_AS(LengthFieldBasedFrameDecoder(1024, 0, 5), trellis::InvalidArgumentError);
  CHECK_THROWS_AS(LengthFieldBasedFrameDecoder(0, 0, 2), trellis::InvalidArgumentError);
  CHECK_THROWS_AS(LengthFieldBasedFrameDecoder(4, 3, 2), trellis::InvalidArgumentError);
}

TEST_CASE(
    "LengthFieldBasedFrameDecoder fail_fast fails as soon as the length is read, then "
    "skips the frame") {
  EmbeddedChannel ch{std::make_shared<LengthFieldBasedFrameDecoder>(8, 0, 1, 0, 1)};
  try {
    ch.write_inbound(ByteBuf::from(bytes({10}) + "aaa"));
    FAIL("no exception");
  } catch (const TooLongFrameError& e) {
    CHECK(std::string(e.what()).find("discarding") != std::string::npos);
    CHECK(e.position() == 0);
  }
  CHECK_FALSE(ch.write_inbound(ByteBuf::from("aaaaaaa")));
  CHECK(ch.write_inbound(ByteBuf::from(bytes({2}) + "ok")));
  TRELLIS_CHECK_INBOUND_STRING(ch, "ok");
  CHECK_FALSE(ch.finish());
}

TEST_CASE("LengthFieldBasedFrameDecoder without fail_fast fails once the frame was skipped") {
  EmbeddedChannel ch{std::make_shared<LengthFieldBasedFrameDecoder>(8, 0, 1, 0, 1, false)};
  CHECK_FALSE(ch.write_inbound(ByteBuf::from(bytes({10}) + "aaa")));
  CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from("aaaaaaa")), TooLongFrameError);
  CHECK(ch.write_inbound(ByteBuf::from(bytes({2}) + "ok")));
  TRELLIS_CHECK_INBOUND_STRING(ch, "ok");
}

TEST_CASE("LengthFieldBasedFrameDecoder skips a too long frame that arrived whole") {
  EmbeddedChannel ch{std::make_shared<LengthFieldBasedFrameDecoder>(8, 0, 1, 0, 1)};
  CHECK_THROWS_AS(
      ch.write_inbound(ByteBuf::from(bytes({10}) + std::string(10, 'a') + bytes({2}) + "ok")),
      TooLongFrameError);
  // As in Netty, the loop stops at the error: the rest is decoded with the next read.
  ch.write_inbound(ByteBuf::from(bytes({1}) + "!"));
  TRELLIS_CHECK_INBOUND_STRING(ch, "ok");
  TRELLIS_CHECK_INBOUND_STRING(ch, "!");
}

TEST_CASE("LengthFieldBasedFrameDecoder rejects negative and too short adjusted lengths") {
  {
    EmbeddedChannel ch{std::make_shared<LengthFieldBasedFrameDecoder>(64, 0, 8)};
    CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from(std::string(8, '\xff'))), DecoderError);
  }
  {
    EmbeddedChannel ch{std::make_shared<LengthFieldBasedFrameDecoder>(64, 0, 1, -3)};
    CHECK_THROWS_WITH_AS(ch.write_inbound(ByteBuf::from(bytes({1, 'x'}))),
                         doctest::Contains("less than length_field_end_offset"), DecoderError);
  }
  {
    EmbeddedChannel ch{std::make_shared<LengthFieldBasedFrameDecoder>(64, 0, 1, 0, 5)};
    CHECK_THROWS_WITH_AS(ch.write_inbound(ByteBuf::from(bytes({1, 'x'}))),
                         doctest::Contains("initial_bytes_to_strip"), DecoderError);
  }
  {
    // A huge 8-byte length is too long, not an overflow.
    EmbeddedChannel ch{std::make_shared<LengthFieldBasedFrameDecoder>(64, 0, 8, 100)};
    CHECK_THROWS_AS(
        ch.write_inbound(ByteBuf::from(bytes({0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}))),
        TooLongFrameError);
  }
}

// --- LineBasedFrameDecoder ---------------------------------------------------------------------

TEST_CASE("LineBasedFrameDecoder splits at \\n and \\r\\n and strips the delimiter") {
  TRELLIS_CHECK_DECODER(verify_frame_decoder(make<LineBasedFrameDecoder>(64),
                                             "first\r\nsecond\n\nlast\r\n",
                                             {"first", "second", "", "last"}));
}

TEST_CASE("LineBasedFrameDecoder keeps the delimiter when asked") {
  TRELLIS_CHECK_DECODER(verify_frame_decoder(make<LineBasedFrameDecoder>(64, false),
                                             "first\r\nsecond\n\r\n",
                                             {"first\r\n", "second\n", "\r\n"}));
}

TEST_CASE("LineBasedFrameDecoder keeps a bare \\r inside the line") {
  TRELLIS_CHECK_DECODER(
      verify_frame_decoder(make<LineBasedFrameDecoder>(64), "a\rb\n\r\r\n", {"a\rb", "\r"}));
}

TEST_CASE("LineBasedFrameDecoder fails a too long line once its end is seen, without fail_fast") {
  EmbeddedChannel ch{std::make_shared<LineBasedFrameDecoder>(16, false, false)};
  CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from("12345678901234567890\r\nfirst\n")),
                  TooLongFrameError);
  TRELLIS_CHECK_INBOUND_STRING(ch, "first\n");
  TRELLIS_CHECK_NO_MORE_INBOUND(ch);
}

TEST_CASE("LineBasedFrameDecoder fails a too long line at once with fail_fast") {
  EmbeddedChannel ch{std::make_shared<LineBasedFrameDecoder>(16, false, true)};
  CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from("12345678901234567")), TooLongFrameError);
  CHECK_FALSE(ch.write_inbound(ByteBuf::from("890")));
  CHECK(ch.write_inbound(ByteBuf::from("123\r\nfirst\r\n")));
  TRELLIS_CHECK_INBOUND_STRING(ch, "first\r\n");
  TRELLIS_CHECK_NO_MORE_INBOUND(ch);
}

TEST_CASE(
    "LineBasedFrameDecoder without fail_fast discards across reads (Netty's "
    "testNotFailFast)") {
  EmbeddedChannel ch{std::make_shared<LineBasedFrameDecoder>(2, false, false)};
  CHECK_FALSE(ch.write_inbound(ByteBuf::from(bytes({0, 1, 2}))));
  CHECK_FALSE(ch.write_inbound(ByteBuf::from(bytes({3, 4}))));
  CHECK_THROWS_WITH_AS(ch.write_inbound(ByteBuf::from("\n")), doctest::Contains(": 5 - discarded"),
                       TooLongFrameError);
  CHECK_FALSE(ch.write_inbound(ByteBuf::from("5")));
  CHECK(ch.write_inbound(ByteBuf::from("\n")));
  TRELLIS_CHECK_INBOUND_STRING(ch, "5\n");
  CHECK_FALSE(ch.finish());
}

TEST_CASE("LineBasedFrameDecoder with StringDecoder gives strings") {
  EmbeddedChannel ch{std::make_shared<LineBasedFrameDecoder>(64),
                     std::make_shared<trellis::codec::StringDecoder>()};
  ch.write_inbound(ByteBuf::from("héllo\r\nworld\n"));
  CHECK(ch.read_inbound<std::string>() == "héllo");
  CHECK(ch.read_inbound<std::string>() == "world");
}

TEST_CASE("LineBasedFrameDecoder looks at each byte of a line fed one byte at a time once") {
  constexpr std::size_t kLength = 64 * 1024;
  const std::string line = std::string(kLength / 2, 'x') + "\r" + std::string(kLength / 2, 'y');
  const std::string input = line + "\r\n" + line + "\n";
  for (const bool through_delimiters : {false, true}) {
    CAPTURE(through_delimiters);
    // The limit counts the bytes waiting for the rest of a delimiter, the "\r" of "\r\n".
    auto line_decoder = std::make_shared<LineBasedFrameDecoder>(line.size() + 1);
    auto delimiter_decoder = std::make_shared<DelimiterBasedFrameDecoder>(
        line.size() + 1, trellis::codec::line_delimiter());
    std::shared_ptr<trellis::ChannelHandler> decoder = line_decoder;
    if (through_delimiters) decoder = delimiter_decoder;
    EmbeddedChannel ch{decoder};
    trickle(ch, input);
    CHECK(next_frame(ch) == line);
    CHECK(next_frame(ch) == line);
    TRELLIS_CHECK_NO_MORE_INBOUND(ch);
    const auto examined = through_delimiters ? FrameScanProbe::examined(*delimiter_decoder)
                                             : FrameScanProbe::examined(*line_decoder);
    CHECK(examined <= input.size());
  }
}

// --- DelimiterBasedFrameDecoder ----------------------------------------------------------------

TEST_CASE("DelimiterBasedFrameDecoder splits at any delimiter, the earliest frame first") {
  TRELLIS_CHECK_DECODER(verify_frame_decoder(
      make<DelimiterBasedFrameDecoder>(64, std::vector<std::string>{"--", "|"}), "ab|cd--|e|",
      {"ab", "cd", "", "e"}));
  // "ab" ends the frame "x" before "b" would end "xa".
  TRELLIS_CHECK_DECODER(verify_frame_decoder(
      make<DelimiterBasedFrameDecoder>(64, std::vector<std::string>{"b", "ab"}), "xabyb",
      {"x", "y"}));
}

TEST_CASE("DelimiterBasedFrameDecoder keeps the delimiter when asked") {
  TRELLIS_CHECK_DECODER(verify_frame_decoder(
      make<DelimiterBasedFrameDecoder>(64, false, trellis::codec::nul_delimiter()),
      std::string("ab\0c\0", 5), {std::string("ab\0", 3), std::string("c\0", 2)}));
}

TEST_CASE("DelimiterBasedFrameDecoder with the line delimiters works as the line decoder") {
  TRELLIS_CHECK_DECODER(
      verify_frame_decoder(make<DelimiterBasedFrameDecoder>(64, trellis::codec::line_delimiter()),
                           "TestLine\r\ng\r\nh\n", {"TestLine", "g", "h"}));
}

TEST_CASE("DelimiterBasedFrameDecoder fails a too long frame at once with fail_fast") {
  EmbeddedChannel ch{
      std::make_shared<DelimiterBasedFrameDecoder>(4, true, true, std::vector<std::string>{"|"})};
  CHECK_THROWS_WITH_AS(ch.write_inbound(ByteBuf::from("abcdef")), doctest::Contains("discarding"),
                       TooLongFrameError);
  CHECK(ch.write_inbound(ByteBuf::from("g|ok|")));
  TRELLIS_CHECK_INBOUND_STRING(ch, "ok");
  TRELLIS_CHECK_NO_MORE_INBOUND(ch);
}

TEST_CASE("DelimiterBasedFrameDecoder without fail_fast fails once the delimiter is found") {
  EmbeddedChannel ch{
      std::make_shared<DelimiterBasedFrameDecoder>(4, true, false, std::vector<std::string>{"|"})};
  CHECK_FALSE(ch.write_inbound(ByteBuf::from("abcdef")));
  CHECK_THROWS_WITH_AS(ch.write_inbound(ByteBuf::from("g|ok|")),
                       doctest::Contains(": 7 - discarded"), TooLongFrameError);
  ch.write_inbound(ByteBuf::from("x|"));
  TRELLIS_CHECK_INBOUND_STRING(ch, "ok");
  TRELLIS_CHECK_INBOUND_STRING(ch, "x");
}

TEST_CASE("DelimiterBasedFrameDecoder rejects a too long frame that arrived whole") {
  EmbeddedChannel ch{
      std::make_shared<DelimiterBasedFrameDecoder>(4, std::vector<std::string>{"|"})};
  CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from("abcdefg|")), TooLongFrameError);
  CHECK(ch.write_inbound(ByteBuf::from("ok|")));
  TRELLIS_CHECK_INBOUND_STRING(ch, "ok");
  CHECK_THROWS_AS(DelimiterBasedFrameDecoder(4, std::vector<std::string>{}),
                  trellis::InvalidArgumentError);
  CHECK_THROWS_AS(DelimiterBasedFrameDecoder(4, std::vector<std::string>{""}),
                  trellis::InvalidArgumentError);
}

TEST_CASE(
    "DelimiterBasedFrameDecoder looks at the bytes of a trickling frame a bounded number "
    "of times") {
  // Each read searches the new byte and, for a delimiter of n bytes, the n - 1 before it where
  // the delimiter may have begun: at most 7 + 1 looks per byte here (it was the whole
  // cumulation per read, quadratic in the frame).
  constexpr std::size_t kLength = 64 * 1024;
  auto decoder = std::make_shared<DelimiterBasedFrameDecoder>(
      kLength + 6, std::vector<std::string>{"--END--", "|"});  // room for "--END-" to wait
  EmbeddedChannel ch{decoder};
  std::string frame(kLength, 'x');
  frame.replace(1000, 6, "--END-");  // almost a delimiter
  const std::string input = frame + "--END--" + frame + "|";
  trickle(ch, input);
  CHECK(next_frame(ch) == frame);
  CHECK(next_frame(ch) == frame);
  TRELLIS_CHECK_NO_MORE_INBOUND(ch);
  CHECK(FrameScanProbe::examined(*decoder) <= input.size() * (7 + 1));
}

TEST_CASE(
    "DelimiterBasedFrameDecoder still ends a frame at the earliest delimiter when a long one "
    "began in bytes searched by an earlier read") {
  EmbeddedChannel ch{
      std::make_shared<DelimiterBasedFrameDecoder>(64, std::vector<std::string>{">", "<end>"})};
  CHECK_FALSE(ch.write_inbound(ByteBuf::from("ab<en")));
  // ">" is the first delimiter in the new bytes, but "<end>" began two bytes in.
  CHECK(ch.write_inbound(ByteBuf::from("d>cd>ef")));
  TRELLIS_CHECK_INBOUND_STRING(ch, "ab");
  TRELLIS_CHECK_INBOUND_STRING(ch, "cd");
  TRELLIS_CHECK_NO_MORE_INBOUND(ch);
  // The reader index moved (and read bytes may be discarded) before the next frame's delimiter.
  CHECK_FALSE(ch.write_inbound(ByteBuf::from("g<e")));
  CHECK_FALSE(ch.write_inbound(ByteBuf::from("n")));
  CHECK(ch.write_inbound(ByteBuf::from("d>")));
  TRELLIS_CHECK_INBOUND_STRING(ch, "efg");
  TRELLIS_CHECK_NO_MORE_INBOUND(ch);
  // Every split, several delimiter lengths and orders. Only delimiters that end on the same byte
  // as one begun earlier: were a short one to end first, a stream cut right after it would give
  // the short frame (as in Netty), and no one answer would hold for every split.
  using Delimiters = std::vector<std::string>;
  TRELLIS_CHECK_DECODER(
      verify_frame_decoder(make<DelimiterBasedFrameDecoder>(64, Delimiters{">", "<end>", "##"}),
                           "ab<end>cd>e##f<en<end>g#>", {"ab", "cd", "e", "f<en", "g#"}));
  TRELLIS_CHECK_DECODER(
      verify_frame_decoder(make<DelimiterBasedFrameDecoder>(64, false, Delimiters{"<end>", ">"}),
                           "ab<end>cd>", {"ab<end>", "cd>"}));
  TRELLIS_CHECK_DECODER(verify_frame_decoder(
      make<DelimiterBasedFrameDecoder>(64, Delimiters{"ab", "b"}), "xabybab", {"x", "y", ""}));
}

TEST_CASE("DelimiterBasedFrameDecoder searches a frame from its start after a discarded one") {
  // A too long frame resets the search: a delimiter that began in discarded bytes does not count,
  // and the next frame is searched whole.
  EmbeddedChannel ch{
      std::make_shared<DelimiterBasedFrameDecoder>(4, std::vector<std::string>{"<end>"})};
  CHECK_FALSE(ch.write_inbound(ByteBuf::from("ab")));
  CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from("cde<e")), TooLongFrameError);
  CHECK_FALSE(ch.write_inbound(ByteBuf::from("nd>")));
  CHECK_FALSE(ch.write_inbound(ByteBuf::from("<end>ok<e")));  // the end of the discarded frame
  CHECK(ch.write_inbound(ByteBuf::from("nd>")));
  TRELLIS_CHECK_INBOUND_STRING(ch, "ok");
  TRELLIS_CHECK_NO_MORE_INBOUND(ch);
}

// --- FixedLengthFrameDecoder -------------------------------------------------------------------

TEST_CASE("FixedLengthFrameDecoder splits into frames of the given length") {
  TRELLIS_CHECK_DECODER(
      verify_frame_decoder(make<FixedLengthFrameDecoder>(3), "abcdefghi", {"abc", "def", "ghi"}));
  CHECK_THROWS_AS(FixedLengthFrameDecoder(0), trellis::InvalidArgumentError);
}
