// WebSocketFrameAggregator: joins the fragments of a text or binary message into one frame,
// bounded, while control frames between the fragments pass on at once.
#pragma once

#include <cstddef>
#include <cstdint>

#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

namespace trellis::websocket {

/// Joins a fragmented text or binary message (a first frame with fin false, then continuations up
/// to one with fin true) into one TextWebSocketFrame or BinaryWebSocketFrame with fin true and the
/// first frame's RSV bits (Netty's WebSocketFrameAggregator). A message that is one frame passes
/// on untouched (no copy). Control frames (ping, pong, close) that arrive between fragments pass
/// on at once, as RFC 6455 §5.4 lets them.
///
/// A message whose payload would exceed max_content_length: a CloseWebSocketFrame with 1009 is
/// written and the channel closed once it went out, WebSocketProtocolError is thrown, and the
/// fragments buffered are let go. On the channel's loop; not sharable.
class WebSocketFrameAggregator : public ChannelInboundHandler {
 public:
  /// An aggregator of messages up to `max_content_length` bytes; InvalidArgumentError for 0.
  explicit WebSocketFrameAggregator(std::size_t max_content_length);

  /// The limit.
  std::size_t max_content_length() const noexcept { return max_content_length_; }

  /// Joins data fragments; passes control frames and other messages on.
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  /// Lets go of a message being joined, then passes the event on.
  void channel_inactive(ChannelHandlerContext& ctx) override;
  /// Lets go of a message being joined.
  void handler_removed(ChannelHandlerContext& ctx) override;

 private:
  void append(ChannelHandlerContext& ctx, ByteBuf& fragment);
  [[noreturn]] void too_long(ChannelHandlerContext& ctx);

  std::size_t max_content_length_;
  ByteBuf content_;  // the fragments so far
  std::uint8_t opcode_ = 0;
  std::uint8_t rsv_ = 0;
  bool aggregating_ = false;
  bool joined_ = false;  // content_ is a buffer of ours (not the first fragment's slice)
  bool failed_ = false;
};

}  // namespace trellis::websocket
