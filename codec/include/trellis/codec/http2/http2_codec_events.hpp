// The user events Http2FrameCodec fires towards the application: a stream closed, a stream reset
// by the codec because of a stream error, and a stream's writability change (its flow-control
// window opened or closed).
#pragma once

#include <cstdint>
#include <string>

#include <trellis/codec/http2/http2_error.hpp>

namespace trellis::http2 {

/// A stream left the codec's table: both sides ended it, or it was reset (by either side, or by
/// the codec on a stream error). Fired once per stream, after the frame that closed it.
struct Http2StreamClosedEvent {
  std::uint32_t stream_id = 0;  ///< the stream
};

/// The codec answered a stream error of the peer with RST_STREAM (a malformed request, a window
/// overflow, a refused stream...). The connection goes on.
struct Http2StreamErrorEvent {
  std::uint32_t stream_id = 0;                   ///< the stream reset
  Http2Error error_code = Http2Error::kNoError;  ///< the code sent
  std::string message;                           ///< what the peer did wrong
};

/// Http2FrameCodec::is_stream_writable() changed for `stream_id`: the stream's or the
/// connection's send window opened or closed, or data queued behind them was sent. Stream 0: the
/// connection's window changed, which may change every stream.
struct Http2StreamWritabilityChangedEvent {
  std::uint32_t stream_id = 0;  ///< the stream, or 0 for all of them
};

}  // namespace trellis::http2
