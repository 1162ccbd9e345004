// Internal: failing a WebSocket connection (see fail_connection.hpp).
#include "fail_connection.hpp"

#include <trellis/codec/websocket/websocket_frame.hpp>
#include <trellis/pipeline/channel.hpp>

namespace trellis::websocket::detail {

void fail_connection(ChannelHandlerContext& ctx, std::uint16_t status, std::string_view reason) {
  Channel& channel = ctx.channel();
  if (!channel.is_active()) {
    channel.close();
    return;
  }
  // The reason is cut to fit a control frame (125 bytes, 2 of them the status).
  if (reason.size() > 123) reason = reason.substr(0, 123);
  ChannelPromise promise = ctx.new_promise();
  Future<void> written = promise.future();
  ctx.write_and_flush(CloseWebSocketFrame(status, reason), std::move(promise));
  written.add_listener([&channel](const Future<void>&) { channel.close(); });
}

}  // namespace trellis::websocket::detail
