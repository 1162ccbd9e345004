// StreamCompressor: one compression stream (zlib/gzip/raw deflate, brotli or zstd) behind one
// interface, appending its output to a ByteBuf. The encoders and HttpContentCompressor drive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include <trellis/codec/compression/zlib_wrapper.hpp>
#include <trellis/codec/decoder_error.hpp>
#include <trellis/pipeline/byte_buf.hpp>

namespace trellis::codec {

class StreamCompressor {
 public:
  enum class Op : std::uint8_t {
    kProcess,  ///< compress; output may stay buffered inside the compressor
    kFlush,    ///< and emit everything so far as a complete, decodable block
    kFinish,   ///< and end the stream (trailer); only reset() allows more input after it
  };

  virtual ~StreamCompressor() = default;
  /// Compresses all of `in` (with `op`) and appends the output to `out`, growing it as needed.
  /// Throws EncoderError when the library fails or after kFinish.
  virtual void compress(std::span<const std::byte> in, Op op, ByteBuf& out) = 0;
  /// Starts a new stream with the same settings (reusing the library's state where it can).
  virtual void reset() = 0;
  /// Announces that the stream (from the last reset) will hold exactly `bytes` bytes, so the
  /// library can size its tables and window as its one-shot API would (zstd, brotli). Call right
  /// after reset(), before any input; the stream must then hold exactly that many bytes.
  virtual void set_source_size(std::size_t /*bytes*/) {}
  /// True after kFinish (until reset()).
  bool is_finished() const noexcept { return finished_; }

 protected:
  bool finished_ = false;
};

/// Level: 0-9, or -1 for zlib's default (6).
std::unique_ptr<StreamCompressor> make_zlib_compressor(ZlibWrapper wrapper, int level);
/// Quality 0-11; window_bits 10-24 (the window is 2^window_bits - 16 bytes).
std::unique_ptr<StreamCompressor> make_brotli_compressor(int quality, int window_bits = 22);
/// Level 1-19 (negative: faster modes); the frames carry a checksum.
std::unique_ptr<StreamCompressor> make_zstd_compressor(int level);

}  // namespace trellis::codec
