// The WebSocket frames (RFC 6455 §5) as pipeline messages: TextWebSocketFrame,
// BinaryWebSocketFrame, ContinuationWebSocketFrame, PingWebSocketFrame, PongWebSocketFrame and
// CloseWebSocketFrame, each with its FIN and RSV bits and a ByteBuf payload (Netty's names).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/message.hpp>

namespace trellis::websocket {

/// The frame opcodes of RFC 6455 §5.2 (the others are reserved).
enum class WebSocketOpcode : std::uint8_t {
  kContinuation = 0x0,  ///< A later fragment of a text or binary message.
  kText = 0x1,          ///< The first (or only) frame of a UTF-8 text message.
  kBinary = 0x2,        ///< The first (or only) frame of a binary message.
  kClose = 0x8,         ///< Control: the close handshake.
  kPing = 0x9,          ///< Control: a ping, answered by a pong with the same payload.
  kPong = 0xA,          ///< Control: a pong.
};

/// Whether `opcode` is a control frame's (close, ping, pong and the reserved 0xB-0xF).
constexpr bool is_control_opcode(std::uint8_t opcode) noexcept { return (opcode & 0x8) != 0; }

/// What every frame has: the payload (already unmasked), the FIN bit and the three RSV bits. The
/// six frame types derive from it; a Message holds one of them (test with
/// `is<TextWebSocketFrame>()` or get the common part with websocket_frame_of()).
struct WebSocketFrame {
  /// The application data (unmasked). Frames the decoder makes are slices of the bytes received.
  ByteBuf payload;
  /// FIN: this is the last fragment of its message (always true for control frames).
  bool fin = true;
  /// RSV1, RSV2, RSV3 as the bits 4, 2, 1 (0-7); non-zero only with a negotiated extension.
  std::uint8_t rsv = 0;

  /// An empty final frame.
  WebSocketFrame() = default;
  /// A frame of `payload` with the given FIN and RSV bits.
  explicit WebSocketFrame(ByteBuf payload_bytes, bool final_fragment = true,
                          std::uint8_t rsv_bits = 0) noexcept
      : payload(std::move(payload_bytes)), fin(final_fragment), rsv(rsv_bits) {}
  /// The payload as a string (a copy), for tests and logs.
  std::string text() const { return payload.to_string(); }
};

/// A text message, or its first fragment (fin false). The payload is UTF-8 (checked by
/// Utf8FrameValidator, not by the decoder).
struct TextWebSocketFrame : WebSocketFrame {
  /// This frame's opcode.
  static constexpr WebSocketOpcode kOpcode = WebSocketOpcode::kText;
  using WebSocketFrame::WebSocketFrame;
  /// A final frame holding a copy of `text`.
  explicit TextWebSocketFrame(std::string_view text) : WebSocketFrame(ByteBuf::from(text)) {}
};

/// A binary message, or its first fragment (fin false).
struct BinaryWebSocketFrame : WebSocketFrame {
  /// This frame's opcode.
  static constexpr WebSocketOpcode kOpcode = WebSocketOpcode::kBinary;
  using WebSocketFrame::WebSocketFrame;
};

/// A later fragment of the text or binary message in progress; fin marks the last one.
struct ContinuationWebSocketFrame : WebSocketFrame {
  /// This frame's opcode.
  static constexpr WebSocketOpcode kOpcode = WebSocketOpcode::kContinuation;
  using WebSocketFrame::WebSocketFrame;
  /// A fragment holding a copy of `text`.
  explicit ContinuationWebSocketFrame(std::string_view text, bool final_fragment = true)
      : WebSocketFrame(ByteBuf::from(text), final_fragment) {}
};

/// A ping (at most 125 bytes of payload); the peer answers with a pong carrying the same bytes.
struct PingWebSocketFrame : WebSocketFrame {
  /// This frame's opcode.
  static constexpr WebSocketOpcode kOpcode = WebSocketOpcode::kPing;
  using WebSocketFrame::WebSocketFrame;
};

/// A pong (at most 125 bytes of payload): an answer to a ping, or a unidirectional heartbeat.
struct PongWebSocketFrame : WebSocketFrame {
  /// This frame's opcode.
  static constexpr WebSocketOpcode kOpcode = WebSocketOpcode::kPong;
  using WebSocketFrame::WebSocketFrame;
};

/// A close frame. Its payload is empty, or a 2-byte status code (network order) followed by a
/// UTF-8 reason, at most 125 bytes in all (RFC 6455 §5.5.1).
struct CloseWebSocketFrame : WebSocketFrame {
  /// This frame's opcode.
  static constexpr WebSocketOpcode kOpcode = WebSocketOpcode::kClose;
  using WebSocketFrame::WebSocketFrame;
  /// A close frame with `status` and `reason` (UTF-8; at most 123 bytes, or the encoder refuses
  /// the frame).
  CloseWebSocketFrame(std::uint16_t status, std::string_view reason);
  /// The status code, or nullopt when the payload has none (empty, or a malformed single byte).
  std::optional<std::uint16_t> status_code() const noexcept;
  /// The reason (the payload after the status code; empty without one).
  std::string reason_text() const;
};

/// The common part of the frame `msg` holds, or nullptr when it holds no WebSocket frame.
WebSocketFrame* websocket_frame_of(Message& msg) noexcept;
/// The opcode of the frame `msg` holds, or nullopt when it holds no WebSocket frame.
std::optional<WebSocketOpcode> websocket_opcode_of(const Message& msg) noexcept;
/// A message holding the frame type of `opcode` (one of the six defined) with the given parts.
Message make_websocket_frame(WebSocketOpcode opcode, ByteBuf payload, bool fin = true,
                             std::uint8_t rsv = 0);

}  // namespace trellis::websocket

namespace trellis {
/// A text frame is a ByteBuf and two bytes: moved with memcpy.
template <>
struct is_trivially_relocatable<websocket::TextWebSocketFrame> : std::true_type {};
/// A binary frame is a ByteBuf and two bytes: moved with memcpy.
template <>
struct is_trivially_relocatable<websocket::BinaryWebSocketFrame> : std::true_type {};
/// A continuation frame is a ByteBuf and two bytes: moved with memcpy.
template <>
struct is_trivially_relocatable<websocket::ContinuationWebSocketFrame> : std::true_type {};
/// A ping frame is a ByteBuf and two bytes: moved with memcpy.
template <>
struct is_trivially_relocatable<websocket::PingWebSocketFrame> : std::true_type {};
/// A pong frame is a ByteBuf and two bytes: moved with memcpy.
template <>
struct is_trivially_relocatable<websocket::PongWebSocketFrame> : std::true_type {};
/// A close frame is a ByteBuf and two bytes: moved with memcpy.
template <>
struct is_trivially_relocatable<websocket::CloseWebSocketFrame> : std::true_type {};
}  // namespace trellis
