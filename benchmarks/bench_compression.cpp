// Compression codecs against their libraries called directly, on a 64 KiB JSON-like body:
// - Compress/<codec>: one body as one complete stream with fresh state (ZlibEncoder,
//   BrotliEncoder, ZstdEncoder on an EmbeddedChannel: write, close) vs the library's own
//   init/compress/end in the same binary; the ratio of the two is the framework's overhead.
// - Decompress/<codec>: the same stream decoded (the decoders on an EmbeddedChannel, output in
//   32 KiB buffers) vs the library decoding into one buffer.
// - HttpCompressor/<coding>: one request and its 64 KiB FullHttpResponse through
//   HttpContentCompressor on a long-lived channel (state reused across responses) vs the library
//   compressing the body with reused state; identity is the compressor's cost when it does not
//   compress.
// Bytes per second count the uncompressed body.
#include <benchmark/benchmark.h>

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <zlib.h>
#include <zstd.h>

#include <memory>
#include <string>
#include <vector>

#include <trellis/codec/compression.hpp>
#include <trellis/http.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/embedded_channel.hpp>

namespace {

using namespace trellis;

constexpr int kGzipLevel = 6;
constexpr int kBrotliQuality = 4;
constexpr int kZstdLevel = 3;

const std::string& body() {
  static const std::string s = [] {
    std::string out = "[";
    for (unsigned i = 0; out.size() < 64 * 1024 - 100; ++i) {
      out += "{\"id\":" + std::to_string(i * 7919 % 100003) + ",\"name\":\"user" +
             std::to_string(i * 31 % 977) + "\",\"active\":" + (i % 3 ? "true" : "false") +
             ",\"score\":" + std::to_string((i * 2654435761u) % 10000) + "},";
    }
    out.back() = ']';
    return out;
  }();
  return s;
}

enum Codec { kGzip, kBrotli, kZstd };

// --- the libraries directly ------------------------------------------------------------------

std::size_t direct_compress(Codec codec, const std::string& in, std::string& out) {
  out.resize(in.size() + 1024);
  switch (codec) {
    case kGzip: {
      z_stream z{};
      deflateInit2(&z, kGzipLevel, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
      z.avail_in = static_cast<uInt>(in.size());
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      deflate(&z, Z_FINISH);
      const std::size_t n = z.total_out;
      deflateEnd(&z);
      return n;
    }
    case kBrotli: {
      std::size_t n = out.size();
      BrotliEncoderCompress(kBrotliQuality, 22, BROTLI_MODE_GENERIC, in.size(),
                            reinterpret_cast<const std::uint8_t*>(in.data()), &n,
                            reinterpret_cast<std::uint8_t*>(out.data()));
      return n;
    }
    case kZstd: {
      ZSTD_CCtx* c = ZSTD_createCCtx();
      ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, kZstdLevel);
      ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
      const std::size_t n = ZSTD_compress2(c, out.data(), out.size(), in.data(), in.size());
      ZSTD_freeCCtx(c);
      return n;
    }
  }
  return 0;
}

std::size_t direct_decompress(Codec codec, const std::string& in, std::string& out) {
  out.resize(body().size() + 1024);
  switch (codec) {
    case kGzip: {
      z_stream z{};
      inflateInit2(&z, 31);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
      z.avail_in = static_cast<uInt>(in.size());
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      inflate(&z, Z_FINISH);
      const std::size_t n = z.total_out;
      inflateEnd(&z);
      return n;
    }
    case kBrotli: {
      std::size_t n = out.size();
      BrotliDecoderDecompress(in.size(), reinterpret_cast<const std::uint8_t*>(in.data()), &n,
                              reinterpret_cast<std::uint8_t*>(out.data()));
      return n;
    }
    case kZstd: {
      ZSTD_DCtx* d = ZSTD_createDCtx();
      const std::size_t n = ZSTD_decompressDCtx(d, out.data(), out.size(), in.data(), in.size());
      ZSTD_freeDCtx(d);
      return n;
    }
  }
  return 0;
}

std::string compressed(Codec codec) {
  std::string out;
  out.resize(direct_compress(codec, body(), out));
  return out;
}

// --- trellis -----------------------------------------------------------------------------------

std::shared_ptr<ChannelHandler> encoder(Codec codec) {
  switch (codec) {
    case kGzip:
      return std::make_shared<codec::ZlibEncoder>(codec::ZlibWrapper::kGzip, kGzipLevel);
    case kBrotli:
      return std::make_shared<codec::BrotliEncoder>(kBrotliQuality);
    case kZstd:
      break;
  }
  return std::make_shared<codec::ZstdEncoder>(kZstdLevel);
}

std::shared_ptr<ChannelHandler> decoder(Codec codec) {
  switch (codec) {
    case kGzip:
      return std::make_shared<codec::ZlibDecoder>(codec::ZlibWrapper::kGzip);
    case kBrotli:
      return std::make_shared<codec::BrotliDecoder>();
    case kZstd:
      break;
  }
  return std::make_shared<codec::ZstdDecoder>();
}

void set_bytes(benchmark::State& state, std::size_t compressed_bytes) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body().size()));
  state.counters["ratio"] =
      static_cast<double>(body().size()) / static_cast<double>(compressed_bytes);
}

void BM_Compress_Direct(benchmark::State& state) {
  const auto codec = static_cast<Codec>(state.range(0));
  std::string out;
  std::size_t n = 0;
  for (auto _ : state) {
    n = direct_compress(codec, body(), out);
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, n);
}

void BM_Compress_Encoder(benchmark::State& state) {
  const auto codec = static_cast<Codec>(state.range(0));
  const ByteBuf input = ByteBuf::from(body());
  std::size_t n = 0;
  for (auto _ : state) {
    EmbeddedChannel ch{encoder(codec)};
    ch.write(input.share());
    ch.close();  // finishes the stream
    n = 0;
    while (auto m = ch.read_outbound<ByteBuf>()) n += m->readable_bytes();
  }
  set_bytes(state, n);
}

void BM_Decompress_Direct(benchmark::State& state) {
  const auto codec = static_cast<Codec>(state.range(0));
  const std::string in = compressed(codec);
  std::string out;
  for (auto _ : state) {
    const std::size_t n = direct_decompress(codec, in, out);
    if (n != body().size()) state.SkipWithError("bad size");
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, in.size());
}

void BM_Decompress_Decoder(benchmark::State& state) {
  const auto codec = static_cast<Codec>(state.range(0));
  const std::string in = compressed(codec);
  const ByteBuf input = ByteBuf::from(in);
  for (auto _ : state) {
    EmbeddedChannel ch{decoder(codec)};
    ch.write_inbound(input.share());
    std::size_t n = 0;
    while (auto m = ch.read_inbound<ByteBuf>()) n += m->readable_bytes();
    if (n != body().size()) state.SkipWithError("bad size");
  }
  set_bytes(state, in.size());
}

// The library compressing one response body with state reused across responses.
void BM_HttpCompressor_Direct(benchmark::State& state) {
  const auto codec = static_cast<Codec>(state.range(0));
  const std::string& in = body();
  std::string out(in.size() + 1024, '\0');
  std::size_t n = 0;
  z_stream z{};
  deflateInit2(&z, kGzipLevel, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, kZstdLevel);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  for (auto _ : state) {
    if (codec == kGzip) {
      deflateReset(&z);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
      z.avail_in = static_cast<uInt>(in.size());
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      deflate(&z, Z_FINISH);
      n = z.total_out;
    } else if (codec == kZstd) {
      n = ZSTD_compress2(c, out.data(), out.size(), in.data(), in.size());
    } else {
      n = out.size();
      BrotliEncoderCompress(kBrotliQuality, 22, BROTLI_MODE_GENERIC, in.size(),
                            reinterpret_cast<const std::uint8_t*>(in.data()), &n,
                            reinterpret_cast<std::uint8_t*>(out.data()));
    }
    benchmark::DoNotOptimize(out.data());
  }
  deflateEnd(&z);
  ZSTD_freeCCtx(c);
  set_bytes(state, n);
}

// range(0): 0 gzip, 1 br, 2 zstd, 3 identity (no Accept-Encoding).
void BM_HttpCompressor(benchmark::State& state) {
  static constexpr std::string_view kAccept[] = {"gzip", "br", "zstd", ""};
  const auto accept = kAccept[state.range(0)];
  EmbeddedChannel ch{std::make_shared<http::HttpContentCompressor>()};
  const ByteBuf payload = ByteBuf::from(body());
  std::size_t n = 0;
  const auto allocs = trellis::testing::total_allocations();
  for (auto _ : state) {
    http::FullHttpRequest request;
    request.target = "/data";
    if (!accept.empty()) request.headers.add(http::HeaderId::kAcceptEncoding, accept);
    ch.write_inbound(std::move(request));
    ch.read_inbound<Message>();
    http::FullHttpResponse response;
    response.headers.add(http::HeaderId::kContentType, "application/json");
    response.content = payload.share();
    ch.write_outbound(std::move(response));
    auto out = ch.read_outbound<http::FullHttpResponse>();
    n = out->content.readable_bytes();
  }
  state.counters["allocs_per_op"] =
      benchmark::Counter(static_cast<double>(trellis::testing::total_allocations() - allocs),
                         benchmark::Counter::kAvgIterations);
  set_bytes(state, n);
}

}  // namespace

BENCHMARK(BM_Compress_Direct)->ArgName("gzip_br_zstd")->DenseRange(0, 2);
BENCHMARK(BM_Compress_Encoder)->ArgName("gzip_br_zstd")->DenseRange(0, 2);
BENCHMARK(BM_Decompress_Direct)->ArgName("gzip_br_zstd")->DenseRange(0, 2);
BENCHMARK(BM_Decompress_Decoder)->ArgName("gzip_br_zstd")->DenseRange(0, 2);
BENCHMARK(BM_HttpCompressor_Direct)->ArgName("gzip_br_zstd")->DenseRange(0, 2);
BENCHMARK(BM_HttpCompressor)->ArgName("gzip_br_zstd_identity")->DenseRange(0, 3);
BENCHMARK_MAIN();
