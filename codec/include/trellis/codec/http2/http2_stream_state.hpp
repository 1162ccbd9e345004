// The states of an HTTP/2 stream (RFC 9113 §5.1) as Http2FrameCodec tracks them.
#pragma once

#include <string_view>

namespace trellis::http2 {

/// A stream's state. Push is not supported, so the reserved states never occur; a stream that is
/// not open or half-closed is idle (its id not used yet) or closed.
enum class Http2StreamState {
  kIdle,              ///< not opened yet
  kOpen,              ///< both sides may send
  kHalfClosedLocal,   ///< this endpoint sent END_STREAM; the peer may still send
  kHalfClosedRemote,  ///< the peer sent END_STREAM; this endpoint may still send
  kClosed,            ///< done (both ended, or reset)
};

/// The state's name as RFC 9113 writes it ("half-closed (local)").
constexpr std::string_view http2_stream_state_name(Http2StreamState s) noexcept {
  switch (s) {
    case Http2StreamState::kIdle:
      return "idle";
    case Http2StreamState::kOpen:
      return "open";
    case Http2StreamState::kHalfClosedLocal:
      return "half-closed (local)";
    case Http2StreamState::kHalfClosedRemote:
      return "half-closed (remote)";
    case Http2StreamState::kClosed:
      return "closed";
  }
  return "?";
}

}  // namespace trellis::http2
