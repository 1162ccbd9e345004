// ZlibEncoder: compresses the written ByteBufs as one zlib, gzip or raw deflate stream.
#pragma once

#include <trellis/codec/compression/compression_encoder.hpp>

namespace trellis::codec {

/// level: 0 (store) to 9 (smallest), -1 for zlib's default (6). See CompressionEncoder for
/// flush() and close().
class ZlibEncoder : public CompressionEncoder {
 public:
  static constexpr int kDefaultLevel = 6;
  explicit ZlibEncoder(ZlibWrapper wrapper = ZlibWrapper::kZlib, int level = kDefaultLevel)
      : CompressionEncoder(make_zlib_compressor(wrapper, level)) {}
};

}  // namespace trellis::codec
