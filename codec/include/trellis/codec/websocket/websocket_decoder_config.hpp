// WebSocketDecoderConfig: the limits and policies of WebSocketFrameDecoder.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trellis::websocket {

/// The limits and policies of WebSocketFrameDecoder. The defaults are safe for a public server.
struct WebSocketDecoderConfig {
  /// The largest frame payload accepted (bytes). A frame header announcing more fails the
  /// connection with 1009 before any of the payload is buffered. At most 2^31 - 1.
  std::size_t max_frame_payload_length = std::size_t{64} << 10;
  /// The largest message accepted: the sum of the payloads of a fragmented text or binary message.
  /// A fragment that would take it further fails the connection with 1009 as soon as its header
  /// arrives.
  std::size_t max_message_size = std::size_t{1} << 20;
  /// The RSV bits (RSV1 = 4, RSV2 = 2, RSV3 = 1) a negotiated extension uses; any other RSV bit
  /// set is a protocol error (1002). 0 without extensions.
  std::uint8_t allowed_rsv_bits = 0;
  /// On a protocol violation, send a Close frame with the status code and close the channel
  /// (true, the default), or only throw WebSocketProtocolError and drop the rest of the input.
  bool close_on_protocol_violation = true;
};

}  // namespace trellis::websocket
