// DecompressionLimits: how much a decompressing decoder may produce, so that a small hostile input
// (a "zip bomb") is rejected after a bounded amount of output instead of exhausting memory.
#pragma once

#include <cstddef>

#include <trellis/codec/decoder_error.hpp>

namespace trellis::codec {

struct DecompressionLimits {
  /// The most bytes one compressed stream (one HTTP message body) may decompress to.
  std::size_t max_output_bytes = std::size_t{64} << 20;
  /// The most output bytes per input byte (0: no ratio limit). Text compresses 3-10 times, highly
  /// repetitive JSON up to ~100 times; a deflate bomb reaches ~1000, brotli and zstd far more.
  double max_ratio = 200.0;
  /// The ratio is only checked once the output passed this many bytes (a short, very regular
  /// body may legitimately have a high ratio).
  std::size_t ratio_grace_bytes = std::size_t{1} << 20;
  /// Output is produced in buffers of at most this many bytes.
  std::size_t chunk_size = 32 * 1024;
};

/// A decompressed stream exceeded DecompressionLimits::max_output_bytes or max_ratio.
class DecompressionLimitError : public DecoderError {
 public:
  using DecoderError::DecoderError;
};

}  // namespace trellis::codec
