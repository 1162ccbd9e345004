// WebSocketRole: which end of a WebSocket connection a codec piece serves, which decides masking
// (RFC 6455 §5.3) and who closes the TCP connection (§7.1.1).
#pragma once

#include <cstdint>

namespace trellis::websocket {

/// Which end of the connection a decoder, encoder or protocol handler serves.
enum class WebSocketRole : std::uint8_t {
  /// The server: reads masked frames, sends unmasked ones, closes the TCP connection once the
  /// close handshake is done.
  kServer,
  /// The client: reads unmasked frames, sends masked ones, waits for the server to close the TCP
  /// connection after the close handshake.
  kClient,
};

}  // namespace trellis::websocket
