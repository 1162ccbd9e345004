// ZstdDecoder: decompresses one Zstandard frame into ByteBufs, within limits.
#pragma once

#include <trellis/codec/compression/compression_decoder.hpp>

namespace trellis::codec {

/// Decompresses one Zstandard frame into ByteBufs, within `limits`. One frame per stream: bytes
/// after it are a DecoderError. Windows over 8 MiB are refused. See CompressionDecoder for the
/// other errors; on the channel's loop, not sharable.
class ZstdDecoder : public CompressionDecoder {
 public:
  /// A decoder of one frame, its output bounded by `limits`.
  explicit ZstdDecoder(DecompressionLimits limits = {})
      : CompressionDecoder(make_zstd_decompressor(), limits) {}
};

}  // namespace trellis::codec
