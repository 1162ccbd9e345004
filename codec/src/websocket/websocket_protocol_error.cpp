// WebSocketProtocolError (see websocket_protocol_error.hpp).
#include <trellis/codec/websocket/websocket_protocol_error.hpp>

namespace trellis::websocket {

WebSocketProtocolError::WebSocketProtocolError(std::uint16_t status, const std::string& what,
                                               std::int64_t position)
    : codec::DecoderError("WebSocket " + std::to_string(status) + ": " + what, position),
      status_(status) {}

}  // namespace trellis::websocket
