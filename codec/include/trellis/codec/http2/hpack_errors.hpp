// Errors of the HPACK decoder: a header block it cannot decode (an HTTP/2 COMPRESSION_ERROR, fatal
// to the connection) and a header list larger than the decoder's limit (the stream can be refused
// with 431 while the connection goes on).
#pragma once

#include <cstdint>
#include <string>

#include <trellis/codec/decoder_error.hpp>

namespace trellis::http2 {

/// A header block that is not valid HPACK: a bad integer, index, string, Huffman code or table
/// size update. HTTP/2 answers it with a connection error of type COMPRESSION_ERROR: the dynamic
/// table is no longer known to match the peer's. position() is the offset in the block.
class HpackDecodingError : public codec::DecoderError {
 public:
  using codec::DecoderError::DecoderError;
};

/// The decoded header list is larger (RFC 7541 §4.1 sizes: 32 + name + value per field) than the
/// decoder's max_header_list_size. The rest of the block was still decoded for the dynamic table,
/// which stays in step with the peer's: the codec can refuse the stream alone (431).
class HpackHeaderListTooLargeError : public codec::DecoderError {
 public:
  using codec::DecoderError::DecoderError;
};

}  // namespace trellis::http2
