// Tests of the compression codecs (ZlibEncoder/Decoder, BrotliEncoder/Decoder,
// ZstdEncoder/Decoder) on EmbeddedChannel: round trips checked against the libraries called
// directly, flush blocks, the decoder verifier, corrupt and trailing input, and bombs.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <trellis/codec/compression.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/testing/decoder_verifier.hpp>
#include <trellis/testing/doctest_helpers.hpp>

#include "compression_test_support.hpp"

namespace {

using trellis::ByteBuf;
using trellis::ChannelHandler;
using trellis::ChannelHandlerContext;
using trellis::EmbeddedChannel;
using trellis::codec::BrotliDecoder;
using trellis::codec::BrotliEncoder;
using trellis::codec::CompressionDecoder;
using trellis::codec::DecoderError;
using trellis::codec::DecompressionLimitError;
using trellis::codec::DecompressionLimits;
using trellis::codec::EncoderError;
using trellis::codec::ZlibDecoder;
using trellis::codec::ZlibEncoder;
using trellis::codec::ZlibWrapper;
using trellis::codec::ZstdDecoder;
using trellis::codec::ZstdEncoder;

// One codec under test: how to make its encoder and decoder, and the library's own decoder.
struct Codec {
  std::string name;
  std::function<std::shared_ptr<ChannelHandler>()> encoder;
  std::function<std::shared_ptr<CompressionDecoder>(DecompressionLimits)> decoder;
  std::function<std::string(std::string_view)> reference_decode;
};

std::vector<Codec> codecs() {
  using namespace compression_test;
  return {
      {"zlib", [] { return std::make_shared<ZlibEncoder>(ZlibWrapper::kZlib); },
       [](DecompressionLimits l) { return std::make_shared<ZlibDecoder>(ZlibWrapper::kZlib, l); },
       [](std::string_view s) { return zlib_inflate(s, 15); }},
      {"gzip", [] { return std::make_shared<ZlibEncoder>(ZlibWrapper::kGzip, 9); },
       [](DecompressionLimits l) { return std::make_shared<ZlibDecoder>(ZlibWrapper::kGzip, l); },
       [](std::string_view s) { return zlib_inflate(s, 31); }},
      {"deflate", [] { return std::make_shared<ZlibEncoder>(ZlibWrapper::kNone, 1); },
       [](DecompressionLimits l) { return std::make_shared<ZlibDecoder>(ZlibWrapper::kNone, l); },
       [](std::string_view s) { return zlib_inflate(s, -15); }},
      {"brotli", [] { return std::make_shared<BrotliEncoder>(); },
       [](DecompressionLimits l) { return std::make_shared<BrotliDecoder>(l); },
       [](std::string_view s) { return brotli_decompress(s); }},
      {"zstd", [] { return std::make_shared<ZstdEncoder>(); },
       [](DecompressionLimits l) { return std::make_shared<ZstdDecoder>(l); },
       [](std::string_view s) { return zstd_decompress(s); }},
  };
}

// Writes the pieces through the encoder (one flush at the end) and closes: the whole stream.
std::string compress_with(const Codec& codec, const std::vector<std::string>& pieces) {
  EmbeddedChannel ch{codec.encoder()};
  for (const auto& p : pieces) ch.write(ByteBuf::from(p));
  ch.flush();
  ch.close();
  return trellis::testing::drain_outbound_bytes(ch);
}

// Decodes all of `input` in one buffer; the concatenated output.
std::string decompress_with(const Codec& codec, const std::string& input,
                            DecompressionLimits limits = {}) {
  EmbeddedChannel ch{codec.decoder(limits)};
  ch.write_inbound(ByteBuf::from(input));
  std::string out;
  while (auto buf = ch.read_inbound<ByteBuf>()) out += buf->to_string();
  return out;
}

// The decoder under the verifier: its output chunks depend on how the input is split, so this
// concatenates them and emits the whole text at the end of the input (decode_last).
template <class Base>
class ConcatenatingDecoder : public Base {
 public:
  using Base::Base;

 protected:
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, typename Base::Out&) override {
    typename Base::Out mine;
    Base::decode(ctx, in, mine);
    for (auto& m : mine) text_ += m.template get<ByteBuf>().to_string();
  }
  void decode_last(ChannelHandlerContext& ctx, ByteBuf& in, typename Base::Out& out) override {
    typename Base::Out mine;
    Base::decode_last(ctx, in, mine);
    for (auto& m : mine) text_ += m.template get<ByteBuf>().to_string();
    out.emplace_back(ByteBuf::from(text_));
  }

 private:
  std::string text_;
};

}  // namespace

TEST_CASE("compression encoders round-trip through their decoders and the libraries") {
  const std::string body = compression_test::json_body(200'000);
  const std::vector<std::string> pieces = {body.substr(0, 1), body.substr(1, 70'000), std::string(),
                                           body.substr(70'001)};
  for (const auto& codec : codecs()) {
    CAPTURE(codec.name);
    const std::string compressed = compress_with(codec, pieces);
    CHECK(compressed.size() < body.size() / 3);
    CHECK(codec.reference_decode(compressed) == body);
    CHECK(decompress_with(codec, compressed) == body);
  }
}

TEST_CASE("compression decoders decode what the libraries compressed directly") {
  const std::string body = compression_test::json_body(50'000);
  // zlib's compress2 (zlib format), brotli's and zstd's one-shot APIs.
  std::string z(compressBound(body.size()), '\0');
  uLongf zlen = z.size();
  REQUIRE(compress2(reinterpret_cast<Bytef*>(z.data()), &zlen,
                    reinterpret_cast<const Bytef*>(body.data()), body.size(), 6) == Z_OK);
  z.resize(zlen);
  CHECK(decompress_with(codecs()[0], z) == body);
  std::string b(BrotliEncoderMaxCompressedSize(body.size()), '\0');
  std::size_t blen = b.size();
  REQUIRE(BrotliEncoderCompress(5, 22, BROTLI_MODE_TEXT, body.size(),
                                reinterpret_cast<const std::uint8_t*>(body.data()), &blen,
                                reinterpret_cast<std::uint8_t*>(b.data())));
  b.resize(blen);
  CHECK(decompress_with(codecs()[3], b) == body);
  std::string s(ZSTD_compressBound(body.size()), '\0');
  s.resize(ZSTD_compress(s.data(), s.size(), body.data(), body.size(), 5));
  CHECK(decompress_with(codecs()[4], s) == body);
}

TEST_CASE("ZlibDecoder kZlibOrNone takes both zlib and raw deflate") {
  const std::string body = compression_test::json_body(5'000);
  const auto make = [] {
    return std::make_shared<ConcatenatingDecoder<ZlibDecoder>>(ZlibWrapper::kZlibOrNone);
  };
  trellis::testing::DecoderVerifierOptions options;
  options.close_at_end = true;
  TRELLIS_CHECK_DECODER(trellis::testing::verify_frame_decoder(
      make, compress_with(codecs()[0], {body}), {body}, options));
  TRELLIS_CHECK_DECODER(trellis::testing::verify_frame_decoder(
      make, compress_with(codecs()[2], {body}), {body}, options));
}

TEST_CASE("compression decoders give the same output however the input is split (verifier)") {
  const std::string body = compression_test::json_body(3'000);
  trellis::testing::DecoderVerifierOptions options;
  options.close_at_end = true;
  for (const auto& codec : codecs()) {
    CAPTURE(codec.name);
    const std::string compressed = compress_with(codec, {body});
    std::function<std::shared_ptr<ChannelHandler>()> make;
    if (codec.name == "brotli") {
      make = [] { return std::make_shared<ConcatenatingDecoder<BrotliDecoder>>(); };
    } else if (codec.name == "zstd") {
      make = [] { return std::make_shared<ConcatenatingDecoder<ZstdDecoder>>(); };
    } else {
      const ZlibWrapper w = codec.name == "zlib"   ? ZlibWrapper::kZlib
                            : codec.name == "gzip" ? ZlibWrapper::kGzip
                                                   : ZlibWrapper::kNone;
      make = [w] { return std::make_shared<ConcatenatingDecoder<ZlibDecoder>>(w); };
    }
    TRELLIS_CHECK_DECODER(
        trellis::testing::verify_frame_decoder(make, compressed, {body}, options));
  }
}

TEST_CASE("compression decoders emit output in chunks of at most chunk_size bytes") {
  const std::string body = compression_test::json_body(300'000);
  DecompressionLimits limits;
  limits.chunk_size = 4096;
  for (const auto& codec : codecs()) {
    CAPTURE(codec.name);
    EmbeddedChannel ch{codec.decoder(limits)};
    ch.write_inbound(ByteBuf::from(compress_with(codec, {body})));
    std::string out;
    std::size_t chunks = 0;
    while (auto buf = ch.read_inbound<ByteBuf>()) {
      CHECK(buf->readable_bytes() <= 4096);
      out += buf->to_string();
      ++chunks;
    }
    CHECK(out == body);
    CHECK(chunks >= body.size() / 4096);
  }
}

TEST_CASE("a compression encoder's flush emits a block the peer decodes completely") {
  for (const auto& codec : codecs()) {
    CAPTURE(codec.name);
    EmbeddedChannel enc{codec.encoder()};
    auto decoder = codec.decoder({});
    EmbeddedChannel dec{decoder};
    for (const std::string part : {"first message\n", "second message\n"}) {
      enc.write_outbound(ByteBuf::from(part));  // write and flush
      dec.write_inbound(ByteBuf::from(trellis::testing::drain_outbound_bytes(enc)));
      std::string got;
      while (auto buf = dec.read_inbound<ByteBuf>()) got += buf->to_string();
      CHECK(got == part);
      CHECK_FALSE(decoder->is_finished());
    }
    enc.close();  // the trailer
    dec.write_inbound(ByteBuf::from(trellis::testing::drain_outbound_bytes(enc)));
    CHECK(decoder->is_finished());
    TRELLIS_CHECK_NO_MORE_INBOUND(dec);
  }
}

TEST_CASE("a compression encoder holds small writes until flush and refuses writes after finish") {
  for (const auto& codec : codecs()) {
    CAPTURE(codec.name);
    auto encoder = std::make_shared<ZlibEncoder>(ZlibWrapper::kGzip);
    EmbeddedChannel ch{encoder};
    ch.write(ByteBuf::from("tiny"));
    ch.run_pending_tasks();
    // The gzip header at most: deflate keeps the bytes until a flush.
    CHECK(trellis::testing::drain_outbound_bytes(ch).size() <= 10);
    encoder->finish();
    CHECK(encoder->is_finished());
    CHECK_FALSE(trellis::testing::drain_outbound_bytes(ch).empty());
    ch.write(ByteBuf::from("late"));
    ch.flush();
    CHECK_THROWS_AS(ch.check_exception(), EncoderError);
  }
}

TEST_CASE("a compression encoder taken out of its pipeline forgets the context") {
  auto encoder = std::make_shared<ZlibEncoder>(ZlibWrapper::kGzip);
  EmbeddedChannel ch{encoder};
  ch.write(ByteBuf::from("tiny"));
  ch.run_pending_tasks();
  CHECK(ch.pipeline().remove(*encoder) == encoder);
  // The context it remembered is gone with the removal: finish() must not write through it.
  CHECK_THROWS_AS(encoder->finish(), EncoderError);
  CHECK_FALSE(encoder->is_finished());
  // Added again, it finishes in the new pipeline.
  EmbeddedChannel other{encoder};
  encoder->finish();
  CHECK(encoder->is_finished());
  CHECK_FALSE(trellis::testing::drain_outbound_bytes(other).empty());
}

TEST_CASE("compression decoders reject corrupt input with DecoderError") {
  const std::string body = compression_test::json_body(20'000);
  for (const auto& codec : codecs()) {
    CAPTURE(codec.name);
    std::string compressed = compress_with(codec, {body});
    for (std::size_t i = 8; i < compressed.size(); i += 7) compressed[i] ^= 0x5a;
    auto decoder = codec.decoder({});
    EmbeddedChannel ch{decoder};
    CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from(compressed)), DecoderError);
    CHECK(decoder->is_failed());
    // Later input is dropped, not decoded from a broken state.
    ch.write_inbound(ByteBuf::from(std::string(100, 'x')));
    ch.check_exception();
  }
}

TEST_CASE("bytes after the end of a compressed stream are a DecoderError") {
  for (const auto& codec : codecs()) {
    CAPTURE(codec.name);
    const std::string compressed = compress_with(codec, {"payload"});
    auto decoder = codec.decoder({});
    EmbeddedChannel ch{decoder};
    CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from(compressed + "garbage")), DecoderError);
    CHECK(trellis::testing::read_inbound_string(ch) == "payload");
  }
  // A second gzip member is trailing bytes too (one stream per decoder).
  const std::string member = compress_with(codecs()[1], {"one"});
  EmbeddedChannel ch{std::make_shared<ZlibDecoder>(ZlibWrapper::kGzip)};
  CHECK_THROWS_AS(ch.write_inbound(ByteBuf::from(member + member)), DecoderError);
}

TEST_CASE("a compressed stream cut short is a DecoderError when the input ends") {
  const std::string body = compression_test::json_body(20'000);
  for (const auto& codec : codecs()) {
    CAPTURE(codec.name);
    const std::string compressed = compress_with(codec, {body});
    EmbeddedChannel ch{codec.decoder({})};
    ch.write_inbound(ByteBuf::from(compressed.substr(0, compressed.size() - 3)));
    while (ch.read_inbound<ByteBuf>()) {
    }
    ch.close();
    CHECK_THROWS_AS(ch.check_exception(), DecoderError);
  }
}

namespace {

// Feeds `bomb` in 16 KiB buffers until the decoder fails; returns the bytes of output delivered
// and the compressed bytes fed. REQUIREs that it failed with DecompressionLimitError.
std::pair<std::size_t, std::size_t> feed_bomb(const std::shared_ptr<CompressionDecoder>& decoder,
                                              const std::string& bomb) {
  EmbeddedChannel ch{decoder};
  std::size_t out = 0;
  std::size_t fed = 0;
  bool rejected = false;
  while (fed < bomb.size() && !rejected) {
    const std::size_t n = std::min<std::size_t>(16384, bomb.size() - fed);
    try {
      ch.write_inbound(ByteBuf::from(std::string_view(bomb).substr(fed, n)));
    } catch (const DecompressionLimitError&) {
      rejected = true;
    }
    fed += n;
    while (auto buf = ch.read_inbound<ByteBuf>()) out += buf->readable_bytes();
  }
  REQUIRE(rejected);
  return {out, fed};
}

}  // namespace

TEST_CASE("a 1 GiB gzip bomb is rejected by the ratio limit within a few MiB of output") {
  const std::string bomb = compression_test::gzip_bomb(1);
  CHECK(bomb.size() < (1u << 20) + (64u << 10));  // ~1 MiB (deflate's ratio tops at ~1032:1)
  // The bomb is valid gzip (its first MiB inflates to zeros); here the decoder stops it.
  const auto [out, fed] = feed_bomb(std::make_shared<ZlibDecoder>(ZlibWrapper::kGzip), bomb);
  CHECK(out <= (4u << 20));
  CHECK(fed <= 64u * 1024);
}

TEST_CASE("a gzip bomb is rejected by max_output_bytes when the ratio check is off") {
  DecompressionLimits limits;
  limits.max_ratio = 0;
  limits.max_output_bytes = 3 << 20;
  const auto [out, fed] = feed_bomb(std::make_shared<ZlibDecoder>(ZlibWrapper::kGzip, limits),
                                    compression_test::gzip_bomb(1));
  CHECK(out <= limits.max_output_bytes);
  CHECK(out >= limits.max_output_bytes - limits.chunk_size);
  (void)fed;
}

TEST_CASE("1 GiB brotli and zstd bombs (a few hundred KiB at most) are rejected within a few MiB") {
  const std::string br = compression_test::brotli_zeros(std::size_t{1} << 30);
  const std::string zs = compression_test::zstd_zeros(std::size_t{1} << 30);
  CHECK(br.size() < (256u << 10));
  CHECK(zs.size() < (64u << 10));
  auto [br_out, br_fed] = feed_bomb(std::make_shared<BrotliDecoder>(), br);
  CHECK(br_out <= (4u << 20));
  auto [zs_out, zs_fed] = feed_bomb(std::make_shared<ZstdDecoder>(), zs);
  CHECK(zs_out <= (4u << 20));
  (void)br_fed;
  (void)zs_fed;
  // With the ratio check off, max_output_bytes stops them.
  DecompressionLimits limits;
  limits.max_ratio = 0;
  limits.max_output_bytes = 2 << 20;
  CHECK(feed_bomb(std::make_shared<BrotliDecoder>(limits), br).first <= limits.max_output_bytes);
  CHECK(feed_bomb(std::make_shared<ZstdDecoder>(limits), zs).first <= limits.max_output_bytes);
}

TEST_CASE("compression levels out of range are refused") {
  CHECK_THROWS_AS(std::make_shared<ZlibEncoder>(ZlibWrapper::kGzip, 10), EncoderError);
  CHECK_THROWS_AS(std::make_shared<ZlibEncoder>(ZlibWrapper::kZlibOrNone), EncoderError);
  CHECK_THROWS_AS(std::make_shared<BrotliEncoder>(12), EncoderError);
  CHECK_THROWS_AS(std::make_shared<ZstdEncoder>(100), EncoderError);
}
