// WebSocketFrameDecoder (see websocket_frame_decoder.hpp).
#include <trellis/codec/websocket/websocket_frame_decoder.hpp>

#include <cstring>

#include <trellis/codec/websocket/websocket_close_status.hpp>
#include <trellis/codec/websocket/websocket_frame.hpp>
#include <trellis/codec/websocket/websocket_mask.hpp>
#include <trellis/codec/websocket/websocket_protocol_error.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/channel.hpp>

#include "fail_connection.hpp"

namespace trellis::websocket {

namespace {

bool is_reserved_opcode(std::uint8_t opcode) noexcept {
  return (opcode >= 0x3 && opcode <= 0x7) || opcode >= 0xB;
}

}  // namespace

WebSocketFrameDecoder::WebSocketFrameDecoder(WebSocketRole role, WebSocketDecoderConfig config)
    : config_(config), role_(role) {
  if (config_.max_frame_payload_length == 0 ||
      config_.max_frame_payload_length > ByteBuf::kMaxCapacity) {
    throw InvalidArgumentError("max_frame_payload_length must be in 1..2^31-1");
  }
  config_.allowed_rsv_bits &= 0x7;
}

void WebSocketFrameDecoder::protocol_violation(ChannelHandlerContext& ctx, ByteBuf& in,
                                               std::uint16_t status, const char* what) {
  const std::int64_t position = stream_position(in);
  corrupt_ = true;
  in.skip_bytes(in.readable_bytes());
  if (config_.close_on_protocol_violation) detail::fail_connection(ctx, status, what);
  throw WebSocketProtocolError(status, what, position);
}

void WebSocketFrameDecoder::decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
  // After a violation, and once the connection is closed (a handler failed it, or the close
  // handshake ended, while this read was being decoded), the rest is not the peer's to be heard.
  if (corrupt_ || !ctx.channel().is_active()) {
    in.skip_bytes(in.readable_bytes());
    return;
  }
  const std::size_t readable = in.readable_bytes();
  if (readable < 2) return;
  const std::byte* p = in.data() + in.reader_index();
  const auto b0 = static_cast<std::uint8_t>(p[0]);
  const auto b1 = static_cast<std::uint8_t>(p[1]);
  const bool fin = (b0 & 0x80) != 0;
  const auto rsv = static_cast<std::uint8_t>((b0 >> 4) & 0x7);
  const auto opcode = static_cast<std::uint8_t>(b0 & 0xf);
  const bool masked = (b1 & 0x80) != 0;
  const std::uint8_t length7 = b1 & 0x7f;

  // Every rule that the first two bytes decide is checked before the rest of the header arrives.
  if ((rsv & ~config_.allowed_rsv_bits) != 0) {
    protocol_violation(ctx, in, close_status::kProtocolError, "RSV bits set without an extension");
  }
  if (is_reserved_opcode(opcode)) {
    protocol_violation(ctx, in, close_status::kProtocolError, "reserved opcode");
  }
  if (masked != (role_ == WebSocketRole::kServer)) {
    protocol_violation(ctx, in, close_status::kProtocolError,
                       masked ? "masked frame from the server" : "unmasked frame from the client");
  }
  const bool control = is_control_opcode(opcode);
  if (control) {
    if (!fin) protocol_violation(ctx, in, close_status::kProtocolError, "fragmented control frame");
    if (length7 > 125) {
      protocol_violation(ctx, in, close_status::kProtocolError, "control frame longer than 125");
    }
  } else if (opcode == 0 && !in_message_) {
    protocol_violation(ctx, in, close_status::kProtocolError, "continuation without a message");
  } else if (opcode != 0 && in_message_) {
    protocol_violation(ctx, in, close_status::kProtocolError,
                       "new message inside a fragmented message");
  }

  const std::size_t length_bytes = length7 == 126 ? 2 : length7 == 127 ? 8 : 0;
  const std::size_t header = 2 + length_bytes + (masked ? 4 : 0);
  if (readable < header) return;
  std::uint64_t length = length7;
  if (length7 == 126) {
    length = in.get_u16(in.reader_index() + 2);
  } else if (length7 == 127) {
    length = in.get_u64(in.reader_index() + 2);
    if ((length >> 63) != 0) {
      protocol_violation(ctx, in, close_status::kProtocolError,
                         "64-bit length with the top bit set");
    }
  }
  if (length > config_.max_frame_payload_length) {
    protocol_violation(ctx, in, close_status::kMessageTooBig, "frame payload too long");
  }
  const std::uint64_t message_size = (in_message_ ? message_size_ : 0) + length;
  if (!control && message_size > config_.max_message_size) {
    protocol_violation(ctx, in, close_status::kMessageTooBig, "message too long");
  }
  if (readable - header < length) return;  // the payload is still on its way

  WebSocketMaskKey key{};
  if (masked) std::memcpy(key.data(), p + header - 4, 4);
  // Whether the cumulation's storage is ours alone: then nobody else can see it unmasked in place.
  const bool sole_owner = in.ref_count() == 1;
  in.skip_bytes(header);
  const auto n = static_cast<std::size_t>(length);
  ByteBuf payload;
  if (!masked || n == 0) {
    payload = in.read_slice(n);
  } else if (sole_owner) {
    payload = in.read_slice(n);
    websocket_mask(std::span<std::byte>(payload.data(), n), key);
  } else {
    payload = ctx.alloc().buffer(n);
    websocket_mask_copy(in.readable_span().first(n), payload.writable_span(), key);
    payload.set_writer_index(n);
    in.skip_bytes(n);
  }
  if (!control) {
    in_message_ = !fin;
    message_size_ = fin ? 0 : message_size;
  }
  switch (static_cast<WebSocketOpcode>(opcode)) {
    case WebSocketOpcode::kContinuation:
      out.emplace_back(ContinuationWebSocketFrame(std::move(payload), fin, rsv));
      break;
    case WebSocketOpcode::kText:
      out.emplace_back(TextWebSocketFrame(std::move(payload), fin, rsv));
      break;
    case WebSocketOpcode::kBinary:
      out.emplace_back(BinaryWebSocketFrame(std::move(payload), fin, rsv));
      break;
    case WebSocketOpcode::kClose:
      out.emplace_back(CloseWebSocketFrame(std::move(payload), fin, rsv));
      break;
    case WebSocketOpcode::kPing:
      out.emplace_back(PingWebSocketFrame(std::move(payload), fin, rsv));
      break;
    case WebSocketOpcode::kPong:
      out.emplace_back(PongWebSocketFrame(std::move(payload), fin, rsv));
      break;
  }
}

}  // namespace trellis::websocket
