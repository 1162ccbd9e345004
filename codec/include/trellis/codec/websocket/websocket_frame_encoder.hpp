// WebSocketFrameEncoder: WebSocket frames to bytes (RFC 6455 §5.2), masked by a client and
// unmasked by a server, written as a small header buffer followed by the payload.
#pragma once

#include <trellis/codec/websocket/websocket_role.hpp>
#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

namespace trellis::websocket {

/// Encodes the six WebSocket frame types (Netty's WebSocket08FrameEncoder); other messages pass
/// through. Each frame goes out as a header buffer (2 to 14 bytes, from the channel's allocator)
/// followed by the payload, so the transport gathers both into one writev:
/// - unmasked (a server): the payload buffer is written as it is, never copied;
/// - masked (a client): a fresh key per frame (next_websocket_mask_key()); a payload of up to
///   256 bytes is masked into the header buffer (one buffer), a larger one is masked in place when
///   the frame holds its storage alone, else into the header buffer.
/// The write's promise goes with the last buffer. A control frame longer than 125 bytes or not
/// final, or RSV bits above 7, fail the write with EncoderError. Sharable (no per-channel state).
class WebSocketFrameEncoder : public ChannelOutboundHandler {
 public:
  /// Masked payloads up to this size are copied into the header buffer while masked.
  static constexpr std::size_t kMaskCopyThreshold = 256;

  /// An encoder for the `role` end of the connection (a client masks, a server does not).
  explicit WebSocketFrameEncoder(WebSocketRole role) noexcept : role_(role) {}

  /// The role the encoder writes for.
  WebSocketRole role() const noexcept { return role_; }
  /// True: the encoder keeps no per-channel state.
  bool is_sharable() const noexcept override { return true; }

  /// Encodes a WebSocket frame; writes any other message as it is.
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;

 private:
  WebSocketRole role_;
};

}  // namespace trellis::websocket
