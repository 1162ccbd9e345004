// WebSocketFrameDecoder: bytes to WebSocket frames (RFC 6455 §5.2), with every framing rule of
// the RFC checked as soon as the bytes that break it arrive, and bounded frames and messages.
#pragma once

#include <cstdint>

#include <trellis/codec/byte_to_message_decoder.hpp>
#include <trellis/codec/websocket/websocket_decoder_config.hpp>
#include <trellis/codec/websocket/websocket_role.hpp>

namespace trellis::websocket {

/// Decodes the bytes of a WebSocket connection into TextWebSocketFrame, BinaryWebSocketFrame,
/// ContinuationWebSocketFrame, PingWebSocketFrame, PongWebSocketFrame and CloseWebSocketFrame
/// messages, unmasked (Netty's WebSocket08FrameDecoder). A frame comes out once all of it has
/// arrived; its payload is a slice of the bytes received, unmasked in place when the decoder holds
/// those bytes alone (otherwise unmasked into a new buffer). Lengths in 7, 16 and 64 bits are all
/// accepted, also when not minimal (RFC 6455 allows it).
///
/// Protocol violations (status 1002): a reserved opcode; an RSV bit the config does not allow; an
/// unmasked frame read by a server or a masked frame read by a client; a control frame that is
/// fragmented or longer than 125 bytes; a continuation without a message in progress, or a new
/// text or binary frame inside one; a 64-bit length with its top bit set. Limits (status 1009):
/// a frame payload above max_frame_payload_length, a fragmented message above max_message_size.
/// Each is detected from the frame header, before the payload is buffered. Then, unless the config
/// says otherwise, a CloseWebSocketFrame with the status is written (so a WebSocketFrameEncoder
/// must be between this decoder and the head of the pipeline) and the channel is closed once it
/// went out; WebSocketProtocolError is thrown (it reaches exception_caught) and every later byte
/// is dropped. Bytes still undecoded when the channel stops being active (a handler after this
/// one failed the connection, or the close handshake ended, in the middle of a read) are dropped
/// too, rather than decoded for nobody.
///
/// Close payloads and text are not checked here: see WebSocketProtocolHandler and
/// Utf8FrameValidator. On the channel's loop; not sharable.
class WebSocketFrameDecoder : public codec::ByteToMessageDecoder {
 public:
  /// A decoder for the `role` end of the connection (a server expects masked frames, a client
  /// unmasked ones), with `config`. Throws InvalidArgumentError for a max_frame_payload_length of
  /// 0 or above 2^31 - 1.
  explicit WebSocketFrameDecoder(WebSocketRole role, WebSocketDecoderConfig config = {});

  /// The role the decoder reads for.
  WebSocketRole role() const noexcept { return role_; }
  /// The limits and policies.
  const WebSocketDecoderConfig& config() const noexcept { return config_; }

 protected:
  /// Decodes the next frame when all of it is in `in`; fails as soon as its header breaks a rule.
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;

 private:
  [[noreturn]] void protocol_violation(ChannelHandlerContext& ctx, ByteBuf& in,
                                       std::uint16_t status, const char* what);

  WebSocketDecoderConfig config_;
  WebSocketRole role_;
  bool corrupt_ = false;
  bool in_message_ = false;         // a fragmented text or binary message is in progress
  std::uint64_t message_size_ = 0;  // payload bytes of that message so far
};

}  // namespace trellis::websocket
