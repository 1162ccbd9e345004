// HTTP/2 error codes (RFC 9113 §7) and the two kinds of protocol error a peer can cause: a
// connection error (GOAWAY, then close) and a stream error (RST_STREAM on that stream alone).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <trellis/codec/decoder_error.hpp>

namespace trellis::http2 {

/// The error codes of RST_STREAM and GOAWAY frames. A peer may send codes not listed here: they
/// are kept as they are (any 32-bit value is valid on the wire).
enum class Http2Error : std::uint32_t {
  kNoError = 0x0,
  kProtocolError = 0x1,
  kInternalError = 0x2,
  kFlowControlError = 0x3,
  kSettingsTimeout = 0x4,
  kStreamClosed = 0x5,
  kFrameSizeError = 0x6,
  kRefusedStream = 0x7,
  kCancel = 0x8,
  kCompressionError = 0x9,
  kConnectError = 0xa,
  kEnhanceYourCalm = 0xb,
  kInadequateSecurity = 0xc,
  kHttp11Required = 0xd,
};

/// The code's name as RFC 9113 writes it ("PROTOCOL_ERROR"), or "UNKNOWN_ERROR".
std::string_view http2_error_name(Http2Error code) noexcept;

/// An HTTP/2 protocol error with its code. position() is unused (-1).
class Http2Exception : public codec::DecoderError {
 public:
  /// An error `code` described by `text`; what() is "NAME: text".
  Http2Exception(Http2Error code, const std::string& text);
  /// The code to send in GOAWAY or RST_STREAM.
  Http2Error code() const noexcept { return code_; }

 private:
  Http2Error code_;
};

/// An error the whole connection cannot survive: the endpoint sends GOAWAY with code() and
/// closes. A frame reader that threw one refuses further input.
class Http2ConnectionError : public Http2Exception {
 public:
  using Http2Exception::Http2Exception;
};

/// An error confined to one stream: the endpoint sends RST_STREAM with code() on stream() and
/// the connection goes on. The reader has consumed the offending frame and can read on.
class Http2StreamError : public Http2Exception {
 public:
  /// An error `code` on `stream`, described by `text`.
  Http2StreamError(std::uint32_t stream, Http2Error code, const std::string& text)
      : Http2Exception(code, text), stream_(stream) {}
  /// The stream in error.
  std::uint32_t stream() const noexcept { return stream_; }

 private:
  std::uint32_t stream_;
};

/// A header list larger than the reader's max header list size (a stream error of type
/// PROTOCOL_ERROR): a server may answer the request with 431 instead of RST_STREAM. The header
/// block was still decoded, so the HPACK state is intact.
class Http2HeaderListTooLargeError : public Http2StreamError {
 public:
  using Http2StreamError::Http2StreamError;
};

}  // namespace trellis::http2
