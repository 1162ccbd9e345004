// Internal: how the WebSocket handlers fail a connection (RFC 6455 §7.1.7): a Close frame with
// the status, then the channel closed once it went out.
#pragma once

#include <cstdint>
#include <string_view>

#include <trellis/pipeline/channel_handler_context.hpp>

namespace trellis::websocket::detail {

/// Writes a CloseWebSocketFrame(status, reason) from `ctx` and closes the channel when the write
/// is done (at once when the channel is not active).
void fail_connection(ChannelHandlerContext& ctx, std::uint16_t status, std::string_view reason);

}  // namespace trellis::websocket::detail
