// ZlibEncoder: compresses the written ByteBufs as one zlib, gzip or raw deflate stream.
#pragma once

#include <trellis/codec/compression/compression_encoder.hpp>

namespace trellis::codec {

/// Compresses the written ByteBufs as one zlib, gzip or raw deflate stream (`wrapper`).
/// level: 0 (store) to 9 (smallest), -1 for zlib's default (6). See CompressionEncoder for
/// flush() and close().
class ZlibEncoder : public CompressionEncoder {
 public:
  /// zlib's default level.
  static constexpr int kDefaultLevel = 6;
  /// Throws EncoderError for a level out of range or ZlibWrapper::kZlibOrNone (decoders only).
  explicit ZlibEncoder(ZlibWrapper wrapper = ZlibWrapper::kZlib, int level = kDefaultLevel)
      : CompressionEncoder(make_zlib_compressor(wrapper, level)) {}
};

}  // namespace trellis::codec
