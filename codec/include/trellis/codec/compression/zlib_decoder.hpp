// ZlibDecoder: decompresses one zlib, gzip or raw deflate stream into ByteBufs, within limits.
#pragma once

#include <trellis/codec/compression/compression_decoder.hpp>

namespace trellis::codec {

/// Decompresses one zlib, gzip or raw deflate stream into ByteBufs, within `limits`. One gzip
/// member per stream: bytes after it (a second member included) are a DecoderError. See
/// CompressionDecoder for the other errors; on the channel's loop, not sharable.
class ZlibDecoder : public CompressionDecoder {
 public:
  /// A decoder of one stream framed as `wrapper`, its output bounded by `limits`.
  explicit ZlibDecoder(ZlibWrapper wrapper = ZlibWrapper::kZlib, DecompressionLimits limits = {})
      : CompressionDecoder(make_zlib_decompressor(wrapper), limits) {}
};

}  // namespace trellis::codec
