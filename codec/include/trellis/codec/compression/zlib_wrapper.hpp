// ZlibWrapper: the framing around a deflate stream (Netty's ZlibWrapper).
#pragma once

#include <cstdint>

namespace trellis::codec {

enum class ZlibWrapper : std::uint8_t {
  kZlib,  ///< RFC 1950: 2-byte header, Adler-32 trailer (HTTP's "deflate" content-coding)
  kGzip,  ///< RFC 1952: gzip header, CRC-32 and length trailer
  kNone,  ///< raw deflate (RFC 1951), no header or trailer
  /// Decoders only: zlib when the first two bytes are a valid zlib header, else raw deflate (some
  /// HTTP servers send raw deflate as "deflate").
  kZlibOrNone,
};

}  // namespace trellis::codec
