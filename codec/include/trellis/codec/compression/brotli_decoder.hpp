// BrotliDecoder: decompresses one brotli stream into ByteBufs, within limits.
#pragma once

#include <trellis/codec/compression/compression_decoder.hpp>

namespace trellis::codec {

/// Decompresses one brotli stream (RFC 7932) into ByteBufs, within `limits`. See
/// CompressionDecoder for the errors; on the channel's loop, not sharable.
class BrotliDecoder : public CompressionDecoder {
 public:
  /// A decoder of one stream, its output bounded by `limits`.
  explicit BrotliDecoder(DecompressionLimits limits = {})
      : CompressionDecoder(make_brotli_decompressor(), limits) {}
};

}  // namespace trellis::codec
