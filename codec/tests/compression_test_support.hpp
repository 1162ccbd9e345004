// Test helpers for the compression codecs: the libraries called directly (to check the codecs
// against an independent implementation), sample bodies, and decompression bombs.
#pragma once

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace compression_test {

// A JSON-like text of about `bytes` bytes: repetitive keys, varying values (compresses ~5-10x).
inline std::string json_body(std::size_t bytes) {
  std::string s = "[";
  for (unsigned i = 0; s.size() < bytes; ++i) {
    s += "{\"id\":" + std::to_string(i * 7919 % 100003) + ",\"name\":\"user" +
         std::to_string(i * 31 % 977) + "\",\"active\":" + (i % 3 ? "true" : "false") +
         ",\"score\":" + std::to_string((i * 2654435761u) % 10000) + "},";
  }
  s.back() = ']';
  return s;
}

// Decompresses a whole zlib/gzip/raw stream (window_bits as for inflateInit2), throwing on error
// or on bytes left after the end.
inline std::string zlib_inflate(std::string_view in, int window_bits) {
  z_stream z{};
  if (inflateInit2(&z, window_bits) != Z_OK) throw std::runtime_error("inflateInit2");
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    char buf[16384];
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      throw std::runtime_error("inflate failed");
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) break;  // stream not finished
  }
  const bool ended = rc == Z_STREAM_END && z.avail_in == 0;
  inflateEnd(&z);
  if (!ended) throw std::runtime_error("zlib stream truncated or followed by bytes");
  return out;
}

inline std::string brotli_decompress(std::string_view in) {
  BrotliDecoderState* s = BrotliDecoderCreateInstance(nullptr, nullptr, nullptr);
  std::string out;
  std::size_t avail_in = in.size();
  auto next_in = reinterpret_cast<const std::uint8_t*>(in.data());
  BrotliDecoderResult rc = BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT;
  while (rc == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT) {
    std::uint8_t buf[16384];
    std::size_t avail_out = sizeof buf;
    std::uint8_t* next_out = buf;
    rc = BrotliDecoderDecompressStream(s, &avail_in, &next_in, &avail_out, &next_out, nullptr);
    out.append(reinterpret_cast<char*>(buf), sizeof buf - avail_out);
  }
  BrotliDecoderDestroyInstance(s);
  if (rc != BROTLI_DECODER_RESULT_SUCCESS || avail_in != 0) {
    throw std::runtime_error("brotli stream bad, truncated or followed by bytes");
  }
  return out;
}

inline std::string zstd_decompress(std::string_view in) {
  ZSTD_DCtx* d = ZSTD_createDCtx();
  std::string out;
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  std::size_t rc = 1;
  while (rc != 0) {
    char buf[16384];
    ZSTD_outBuffer output{buf, sizeof buf, 0};
    rc = ZSTD_decompressStream(d, &output, &input);
    if (ZSTD_isError(rc)) {
      ZSTD_freeDCtx(d);
      throw std::runtime_error("zstd error");
    }
    out.append(buf, output.pos);
    if (rc != 0 && input.pos == input.size && output.pos < output.size) break;
  }
  ZSTD_freeDCtx(d);
  if (rc != 0 || input.pos != input.size) throw std::runtime_error("zstd truncated or followed");
  return out;
}

// One deflate run of `size` zeros, ending byte-aligned (sync flush), compressed at level 9 and
// referring only to zeros before it: repeated after any run of >= 32 KiB zeros, it decodes to
// `size` more zeros. `primed`: the first run of a stream (no zeros before it) when false.
inline std::string deflate_zero_run(std::size_t size, bool primed) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY);
  std::string zeros(size, '\0');
  if (primed) {
    std::string dict(32768, '\0');
    deflateSetDictionary(&z, reinterpret_cast<const Bytef*>(dict.data()),
                         static_cast<uInt>(dict.size()));
  }
  std::string out(deflateBound(&z, static_cast<uLong>(size)) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(zeros.data());
  z.avail_in = static_cast<uInt>(size);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_SYNC_FLUSH);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

// A valid gzip member of ~1 MiB that inflates to `gib` GiB of zeros (deflate's ratio is at most
// ~1032:1, so a 1 GiB gzip bomb cannot be smaller). Built from repeated runs, in milliseconds.
inline std::string gzip_bomb(unsigned gib = 1) {
  constexpr std::size_t kRun = 1 << 20;
  const std::size_t runs = std::size_t{gib} << 10;
  const std::string first = deflate_zero_run(kRun, false);
  const std::string next = deflate_zero_run(kRun, true);
  std::string bomb("\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03", 10);
  bomb += first;
  for (std::size_t i = 1; i < runs; ++i) bomb += next;
  bomb += std::string("\x03\x00", 2);  // a final, empty fixed-Huffman block
  const std::string zeros(kRun, '\0');
  const uLong run_crc = crc32(0, reinterpret_cast<const Bytef*>(zeros.data()), kRun);
  uLong crc = run_crc;
  for (std::size_t i = 1; i < runs; ++i) crc = crc32_combine(crc, run_crc, kRun);
  const auto total = static_cast<std::uint32_t>(runs * kRun);  // ISIZE: modulo 2^32
  for (int i = 0; i < 4; ++i) bomb += static_cast<char>((crc >> (8 * i)) & 0xff);
  for (int i = 0; i < 4; ++i) bomb += static_cast<char>((total >> (8 * i)) & 0xff);
  return bomb;
}

// Brotli and zstd streams of `bytes` zeros, compressed in 1 MiB pieces (both reach ratios far
// beyond deflate's: 1 GiB of zeros is ~190 KiB of brotli at quality 1, ~30 KiB of zstd).
inline std::string brotli_zeros(std::size_t bytes) {
  BrotliEncoderState* s = BrotliEncoderCreateInstance(nullptr, nullptr, nullptr);
  BrotliEncoderSetParameter(s, BROTLI_PARAM_QUALITY, 1);
  const std::string zeros(1 << 20, '\0');
  std::string out;
  std::size_t left = bytes;
  for (;;) {
    const bool last = left <= zeros.size();
    std::size_t avail_in = last ? left : zeros.size();
    left -= avail_in;
    auto next_in = reinterpret_cast<const std::uint8_t*>(zeros.data());
    const auto op = last ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_PROCESS;
    do {
      std::uint8_t buf[65536];
      std::size_t avail_out = sizeof buf;
      std::uint8_t* next_out = buf;
      BrotliEncoderCompressStream(s, op, &avail_in, &next_in, &avail_out, &next_out, nullptr);
      out.append(reinterpret_cast<char*>(buf), sizeof buf - avail_out);
    } while (avail_in > 0 || BrotliEncoderHasMoreOutput(s) ||
             (last && !BrotliEncoderIsFinished(s)));
    if (last) break;
  }
  BrotliEncoderDestroyInstance(s);
  return out;
}

inline std::string zstd_zeros(std::size_t bytes) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
  const std::string zeros(1 << 20, '\0');
  std::string out;
  std::size_t left = bytes;
  for (;;) {
    const bool last = left <= zeros.size();
    const std::size_t n = last ? left : zeros.size();
    left -= n;
    ZSTD_inBuffer input{zeros.data(), n, 0};
    std::size_t rc = 0;
    do {
      char buf[65536];
      ZSTD_outBuffer output{buf, sizeof buf, 0};
      rc = ZSTD_compressStream2(c, &output, &input, last ? ZSTD_e_end : ZSTD_e_continue);
      out.append(buf, output.pos);
    } while (last ? rc != 0 : input.pos < input.size);
    if (last) break;
  }
  ZSTD_freeCCtx(c);
  return out;
}

}  // namespace compression_test
