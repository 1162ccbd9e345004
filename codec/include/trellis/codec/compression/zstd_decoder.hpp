// ZstdDecoder: decompresses one Zstandard frame into ByteBufs, within limits.
#pragma once

#include <trellis/codec/compression/compression_decoder.hpp>

namespace trellis::codec {

/// One frame per stream: bytes after it are a DecoderError. Windows over 8 MiB are refused.
class ZstdDecoder : public CompressionDecoder {
 public:
  explicit ZstdDecoder(DecompressionLimits limits = {})
      : CompressionDecoder(make_zstd_decompressor(), limits) {}
};

}  // namespace trellis::codec
