// BrotliEncoder: compresses the written ByteBufs as one brotli stream.
#pragma once

#include <trellis/codec/compression/compression_encoder.hpp>

namespace trellis::codec {

/// quality: 0 (fastest) to 11 (smallest); 4 suits dynamic content. window_bits: 10 to 24.
class BrotliEncoder : public CompressionEncoder {
 public:
  static constexpr int kDefaultQuality = 4;
  explicit BrotliEncoder(int quality = kDefaultQuality, int window_bits = 22)
      : CompressionEncoder(make_brotli_compressor(quality, window_bits)) {}
};

}  // namespace trellis::codec
