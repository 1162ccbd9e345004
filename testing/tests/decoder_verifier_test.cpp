// Tests of the decoder verifier with small hand-written decoders (trellis::testing must not
// depend on trellis::codec, so neither do these tests).
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <utility>

#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/testing/decoder_verifier.hpp>

namespace {

using trellis::ByteBuf;
using trellis::ChannelHandlerContext;
using trellis::Message;
using trellis::testing::DecoderStep;
using trellis::testing::verify_decoder;
using trellis::testing::verify_frame_decoder;

// Emits each '\n'-terminated line (without '\n') as a std::string, keeping partial lines; hands
// a partial line on when removed, like ByteToMessageDecoder does.
class LineDecoder : public trellis::ChannelInboundHandler {
 public:
  explicit LineDecoder(bool as_frames = false) : as_frames_(as_frames) {}
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    pending_ += msg.take<ByteBuf>().to_string();
    for (auto nl = pending_.find('\n'); nl != std::string::npos; nl = pending_.find('\n')) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      if (as_frames_) {
        ctx.fire_channel_read(ByteBuf::from(line));
      } else {
        ctx.fire_channel_read(std::move(line));
      }
    }
  }
  void handler_removed(ChannelHandlerContext& ctx) override {
    if (!pending_.empty()) ctx.fire_channel_read(ByteBuf::from(pending_));
  }
  void channel_inactive(ChannelHandlerContext& ctx) override {
    if (!pending_.empty()) ctx.fire_channel_read(std::exchange(pending_, {}));
    ctx.fire_channel_inactive();
  }

 private:
  std::string pending_;
  bool as_frames_;
};

// Wrong on purpose: every inbound buffer is one message, whatever its content.
class ChunkEcho : public trellis::ChannelInboundHandler {
 public:
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    ctx.fire_channel_read(msg.take<ByteBuf>().to_string());
  }
};

trellis::testing::DecoderFactory lines(bool as_frames = false) {
  return [as_frames] { return std::make_shared<LineDecoder>(as_frames); };
}

}  // namespace

TEST_CASE("verify_decoder accepts a decoder that is independent of how the input is split") {
  TRELLIS_CHECK_DECODER(
      verify_decoder<std::string>(lines(), "ab\ncd\n\nxyz\n", {"ab", "cd", "", "xyz"}));
}

TEST_CASE("verify_decoder takes steps of input and the messages each produces") {
  std::vector<DecoderStep<std::string>> steps = {{"a\nb", {"a"}}, {"c\n", {"bc"}}};
  TRELLIS_CHECK_DECODER(verify_decoder<std::string>(lines(), steps));
}

TEST_CASE("verify_frame_decoder compares ByteBuf frames with strings") {
  TRELLIS_CHECK_DECODER(verify_frame_decoder(lines(true), "one\ntwo\n", {"one", "two"}));
}

TEST_CASE("verify_decoder names the mode in which a split-dependent decoder fails") {
  auto failure =
      verify_decoder<std::string>([] { return std::make_shared<ChunkEcho>(); }, "abc", {"abc"});
  REQUIRE(failure.has_value());
  CHECK(failure->find("byte by byte") != std::string::npos);
  CHECK(failure->find("\"a\"") != std::string::npos);
}

TEST_CASE("verify_decoder reports bytes left undecoded") {
  auto failure = verify_decoder<std::string>(lines(), "a\nrest", {"a"});
  REQUIRE(failure.has_value());
  CHECK(failure->find("4 byte(s) left undecoded") != std::string::npos);
}

TEST_CASE("verify_decoder with close_at_end compares what the end of input produces") {
  trellis::testing::DecoderVerifierOptions options;
  options.close_at_end = true;
  TRELLIS_CHECK_DECODER(verify_decoder<std::string>(lines(), "a\nrest", {"a", "rest"}, options));
}

TEST_CASE("verify_decoder reports missing, extra and different messages") {
  auto missing = verify_decoder<std::string>(lines(), "a\n", {"a", "b"});
  REQUIRE(missing.has_value());
  CHECK(missing->find("message #1 missing") != std::string::npos);
  auto extra = verify_decoder<std::string>(lines(), "a\nb\n", {"a"});
  REQUIRE(extra.has_value());
  CHECK(extra->find("unexpected extra message #1: \"b\"") != std::string::npos);
  auto differs = verify_decoder<std::string>(lines(), "a\n", {"x"});
  REQUIRE(differs.has_value());
  CHECK(differs->find("expected \"x\", got \"a\"") != std::string::npos);
}

TEST_CASE("verify_decoder reports a message of the wrong type") {
  auto failure = verify_decoder<int>(lines(), "a\n", {1});
  REQUIRE(failure.has_value());
  CHECK(failure->find("a message of type") != std::string::npos);
}
