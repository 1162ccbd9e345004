// BrotliDecoder: decompresses one brotli stream into ByteBufs, within limits.
#pragma once

#include <trellis/codec/compression/compression_decoder.hpp>

namespace trellis::codec {

class BrotliDecoder : public CompressionDecoder {
 public:
  explicit BrotliDecoder(DecompressionLimits limits = {})
      : CompressionDecoder(make_brotli_decompressor(), limits) {}
};

}  // namespace trellis::codec
