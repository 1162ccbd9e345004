// ZstdEncoder: compresses the written ByteBufs as one Zstandard frame.
#pragma once

#include <trellis/codec/compression/compression_encoder.hpp>

namespace trellis::codec {

/// level: 1 (fastest) to 19 (smallest; windows stay at most 8 MiB), negative for faster modes.
class ZstdEncoder : public CompressionEncoder {
 public:
  static constexpr int kDefaultLevel = 3;
  explicit ZstdEncoder(int level = kDefaultLevel)
      : CompressionEncoder(make_zstd_compressor(level)) {}
};

}  // namespace trellis::codec
