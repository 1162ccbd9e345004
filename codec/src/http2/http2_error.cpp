#include <trellis/codec/http2/http2_error.hpp>

namespace trellis::http2 {

std::string_view http2_error_name(Http2Error code) noexcept {
  switch (code) {
    case Http2Error::kNoError:
      return "NO_ERROR";
    case Http2Error::kProtocolError:
      return "PROTOCOL_ERROR";
    case Http2Error::kInternalError:
      return "INTERNAL_ERROR";
    case Http2Error::kFlowControlError:
      return "FLOW_CONTROL_ERROR";
    case Http2Error::kSettingsTimeout:
      return "SETTINGS_TIMEOUT";
    case Http2Error::kStreamClosed:
      return "STREAM_CLOSED";
    case Http2Error::kFrameSizeError:
      return "FRAME_SIZE_ERROR";
    case Http2Error::kRefusedStream:
      return "REFUSED_STREAM";
    case Http2Error::kCancel:
      return "CANCEL";
    case Http2Error::kCompressionError:
      return "COMPRESSION_ERROR";
    case Http2Error::kConnectError:
      return "CONNECT_ERROR";
    case Http2Error::kEnhanceYourCalm:
      return "ENHANCE_YOUR_CALM";
    case Http2Error::kInadequateSecurity:
      return "INADEQUATE_SECURITY";
    case Http2Error::kHttp11Required:
      return "HTTP_1_1_REQUIRED";
  }
  return "UNKNOWN_ERROR";
}

Http2Exception::Http2Exception(Http2Error code, const std::string& text)
    : codec::DecoderError(std::string(http2_error_name(code)) + ": " + text), code_(code) {}

}  // namespace trellis::http2
