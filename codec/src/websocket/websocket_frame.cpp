// The WebSocket frame messages (see websocket_frame.hpp).
#include <trellis/codec/websocket/websocket_frame.hpp>

#include <trellis/pipeline/byte_buf_allocator.hpp>

namespace trellis::websocket {

CloseWebSocketFrame::CloseWebSocketFrame(std::uint16_t status, std::string_view reason) {
  payload = ByteBufAllocator::default_allocator().buffer(2 + reason.size());
  payload.write_u16(status);
  payload.write_string(reason);
}

std::optional<std::uint16_t> CloseWebSocketFrame::status_code() const noexcept {
  if (payload.readable_bytes() < 2) return std::nullopt;
  return payload.get_u16(payload.reader_index());
}

std::string CloseWebSocketFrame::reason_text() const {
  if (payload.readable_bytes() <= 2) return {};
  const auto bytes = payload.readable_span().subspan(2);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

WebSocketFrame* websocket_frame_of(Message& msg) noexcept {
  if (auto* f = msg.try_get<TextWebSocketFrame>()) return f;
  if (auto* f = msg.try_get<BinaryWebSocketFrame>()) return f;
  if (auto* f = msg.try_get<ContinuationWebSocketFrame>()) return f;
  if (auto* f = msg.try_get<PingWebSocketFrame>()) return f;
  if (auto* f = msg.try_get<PongWebSocketFrame>()) return f;
  if (auto* f = msg.try_get<CloseWebSocketFrame>()) return f;
  return nullptr;
}

std::optional<WebSocketOpcode> websocket_opcode_of(const Message& msg) noexcept {
  if (msg.is<TextWebSocketFrame>()) return WebSocketOpcode::kText;
  if (msg.is<BinaryWebSocketFrame>()) return WebSocketOpcode::kBinary;
  if (msg.is<ContinuationWebSocketFrame>()) return WebSocketOpcode::kContinuation;
  if (msg.is<PingWebSocketFrame>()) return WebSocketOpcode::kPing;
  if (msg.is<PongWebSocketFrame>()) return WebSocketOpcode::kPong;
  if (msg.is<CloseWebSocketFrame>()) return WebSocketOpcode::kClose;
  return std::nullopt;
}

Message make_websocket_frame(WebSocketOpcode opcode, ByteBuf payload, bool fin, std::uint8_t rsv) {
  switch (opcode) {
    case WebSocketOpcode::kContinuation:
      return ContinuationWebSocketFrame(std::move(payload), fin, rsv);
    case WebSocketOpcode::kText:
      return TextWebSocketFrame(std::move(payload), fin, rsv);
    case WebSocketOpcode::kBinary:
      return BinaryWebSocketFrame(std::move(payload), fin, rsv);
    case WebSocketOpcode::kClose:
      return CloseWebSocketFrame(std::move(payload), fin, rsv);
    case WebSocketOpcode::kPing:
      return PingWebSocketFrame(std::move(payload), fin, rsv);
    case WebSocketOpcode::kPong:
      return PongWebSocketFrame(std::move(payload), fin, rsv);
  }
  throw InvalidArgumentError("not a WebSocket opcode: " + std::to_string(static_cast<int>(opcode)));
}

}  // namespace trellis::websocket
