// ZlibDecoder: decompresses one zlib, gzip or raw deflate stream into ByteBufs, within limits.
#pragma once

#include <trellis/codec/compression/compression_decoder.hpp>

namespace trellis::codec {

/// One gzip member per stream: bytes after it (a second member included) are a DecoderError.
class ZlibDecoder : public CompressionDecoder {
 public:
  explicit ZlibDecoder(ZlibWrapper wrapper = ZlibWrapper::kZlib, DecompressionLimits limits = {})
      : CompressionDecoder(make_zlib_decompressor(wrapper), limits) {}
};

}  // namespace trellis::codec
