// WebSocketFrameAggregator (see websocket_frame_aggregator.hpp).
#include <trellis/codec/websocket/websocket_frame_aggregator.hpp>

#include <algorithm>
#include <string>

#include <trellis/codec/websocket/websocket_close_status.hpp>
#include <trellis/codec/websocket/websocket_frame.hpp>
#include <trellis/codec/websocket/websocket_protocol_error.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>

#include "fail_connection.hpp"

namespace trellis::websocket {

WebSocketFrameAggregator::WebSocketFrameAggregator(std::size_t max_content_length)
    : max_content_length_(max_content_length) {
  if (max_content_length == 0) throw InvalidArgumentError("max_content_length must be > 0");
}

void WebSocketFrameAggregator::too_long(ChannelHandlerContext& ctx) {
  failed_ = true;
  aggregating_ = false;
  content_ = ByteBuf();
  detail::fail_connection(ctx, close_status::kMessageTooBig, "message too long");
  throw WebSocketProtocolError(
      close_status::kMessageTooBig,
      "message of more than " + std::to_string(max_content_length_) + " bytes");
}

void WebSocketFrameAggregator::append(ChannelHandlerContext& ctx, ByteBuf& fragment) {
  const std::size_t size = content_.readable_bytes() + fragment.readable_bytes();
  if (size > max_content_length_) too_long(ctx);
  if (!joined_) {
    // The first fragment is a slice that cannot grow: move to a buffer of ours, with room.
    ByteBuf joined = ctx.alloc().buffer(std::min(max_content_length_, size * 2));
    joined.write_bytes(content_);
    content_ = std::move(joined);
    joined_ = true;
  }
  content_.write_bytes(fragment);
}

void WebSocketFrameAggregator::channel_read(ChannelHandlerContext& ctx, Message msg) {
  const auto opcode = websocket_opcode_of(msg);
  if (!opcode || is_control_opcode(static_cast<std::uint8_t>(*opcode))) {
    ctx.fire_channel_read(std::move(msg));
    return;
  }
  if (failed_) return;  // the connection is being failed
  WebSocketFrame& frame = *websocket_frame_of(msg);
  if (*opcode != WebSocketOpcode::kContinuation) {
    if (aggregating_) {
      throw WebSocketProtocolError(close_status::kProtocolError,
                                   "new message inside a fragmented message");
    }
    if (frame.payload.readable_bytes() > max_content_length_) too_long(ctx);
    if (frame.fin) {
      ctx.fire_channel_read(std::move(msg));
      return;
    }
    // The first fragment is kept as it is; the second one moves both into a buffer of ours.
    content_ = std::move(frame.payload);
    joined_ = false;
    aggregating_ = true;
    opcode_ = static_cast<std::uint8_t>(*opcode);
    rsv_ = frame.rsv;
    return;
  }
  if (!aggregating_) {
    throw WebSocketProtocolError(close_status::kProtocolError, "continuation without a message");
  }
  append(ctx, frame.payload);
  if (!frame.fin) return;
  aggregating_ = false;
  joined_ = false;
  ctx.fire_channel_read(
      make_websocket_frame(static_cast<WebSocketOpcode>(opcode_), std::move(content_), true, rsv_));
}

void WebSocketFrameAggregator::channel_inactive(ChannelHandlerContext& ctx) {
  content_ = ByteBuf();
  aggregating_ = false;
  ctx.fire_channel_inactive();
}

void WebSocketFrameAggregator::handler_removed(ChannelHandlerContext& /*ctx*/) {
  content_ = ByteBuf();
  aggregating_ = false;
}

}  // namespace trellis::websocket
