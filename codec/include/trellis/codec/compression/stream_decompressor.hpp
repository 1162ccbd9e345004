// StreamDecompressor: one decompression stream (zlib/gzip/raw deflate, brotli or zstd) behind one
// interface, and BoundedDecompression, which drives one within DecompressionLimits and hands out
// its output in bounded buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include <trellis/codec/compression/decompression_limits.hpp>
#include <trellis/codec/compression/zlib_wrapper.hpp>
#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>

namespace trellis::codec {

class StreamDecompressor {
 public:
  struct Step {
    std::size_t consumed = 0;  ///< bytes of `in` used
    std::size_t produced = 0;  ///< bytes written to the front of `out`
    bool finished = false;     ///< the end of the compressed stream was reached
  };
  virtual ~StreamDecompressor() = default;
  /// Decompresses from `in` into `out`. Throws DecoderError on corrupt input.
  virtual Step decompress(std::span<const std::byte> in, std::span<std::byte> out) = 0;
  /// Starts a new stream with the same settings.
  virtual void reset() = 0;
};

std::unique_ptr<StreamDecompressor> make_zlib_decompressor(ZlibWrapper wrapper);
std::unique_ptr<StreamDecompressor> make_brotli_decompressor();
/// Accepts windows up to 8 MiB (RFC 9659's limit for the HTTP "zstd" coding), bounding memory.
std::unique_ptr<StreamDecompressor> make_zstd_decompressor();

/// One compressed stream decoded within limits: next() returns the next buffer of output (at most
/// limits.chunk_size bytes), empty when more input is needed or the stream ended. Throws
/// DecompressionLimitError when the output passes the limits, DecoderError on corrupt input or on
/// bytes after the end of the stream.
class BoundedDecompression {
 public:
  BoundedDecompression(std::unique_ptr<StreamDecompressor> engine, DecompressionLimits limits);

  /// Consumes from the front of `in` (advancing it) and returns output; call again while it
  /// returns a non-empty buffer (the decompressor may hold more output than one buffer).
  ByteBuf next(ByteBufAllocator& alloc, std::span<const std::byte>& in);
  /// The stream ended (its trailer was read).
  bool is_finished() const noexcept { return finished_; }
  /// Some input was consumed since the start (or the last reset()).
  bool is_started() const noexcept { return total_in_ > 0; }
  std::uint64_t total_in() const noexcept { return total_in_; }
  std::uint64_t total_out() const noexcept { return total_out_; }
  const DecompressionLimits& limits() const noexcept { return limits_; }
  /// Starts a new stream (the next message body).
  void reset();

 private:
  void check_limits() const;

  std::unique_ptr<StreamDecompressor> engine_;
  DecompressionLimits limits_;
  ByteBuf chunk_;  // output being filled; handed out when full or when input runs out
  std::uint64_t total_in_ = 0;
  std::uint64_t total_out_ = 0;
  bool finished_ = false;
};

}  // namespace trellis::codec
