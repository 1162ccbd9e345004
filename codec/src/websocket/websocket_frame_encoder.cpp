// WebSocketFrameEncoder (see websocket_frame_encoder.hpp).
#include <trellis/codec/websocket/websocket_frame_encoder.hpp>

#include <string>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/codec/websocket/websocket_frame.hpp>
#include <trellis/codec/websocket/websocket_mask.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>

namespace trellis::websocket {

void WebSocketFrameEncoder::write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  const auto opcode = websocket_opcode_of(msg);
  if (!opcode) {
    ctx.write(std::move(msg), std::move(promise));
    return;
  }
  WebSocketFrame& frame = *websocket_frame_of(msg);
  const auto code = static_cast<std::uint8_t>(*opcode);
  const std::size_t length = frame.payload.readable_bytes();
  if (is_control_opcode(code) && (length > 125 || !frame.fin)) {
    throw codec::EncoderError("a control frame must be final and at most 125 bytes, not " +
                              std::to_string(length));
  }
  if (frame.rsv > 7) throw codec::EncoderError("RSV bits out of range");

  const bool masked = role_ == WebSocketRole::kClient;
  const std::size_t header_size = 2 +
                                  (length <= 125      ? 0
                                   : length <= 0xffff ? 2
                                                      : 8) +
                                  (masked ? 4 : 0);
  // A masked payload is copied into the header buffer while masked when it is small, or when the
  // frame shares its storage with another handle (masking in place would change what they see).
  const bool copy_payload =
      masked && length > 0 && (length <= kMaskCopyThreshold || frame.payload.ref_count() != 1);
  ByteBuf out = ctx.alloc().buffer(header_size + (copy_payload ? length : 0));
  out.write_u8(static_cast<std::uint8_t>((frame.fin ? 0x80 : 0) | (frame.rsv << 4) | code));
  const std::uint8_t mask_bit = masked ? 0x80 : 0;
  if (length <= 125) {
    out.write_u8(static_cast<std::uint8_t>(mask_bit | length));
  } else if (length <= 0xffff) {
    out.write_u8(mask_bit | 126);
    out.write_u16(static_cast<std::uint16_t>(length));
  } else {
    out.write_u8(mask_bit | 127);
    out.write_u64(length);
  }
  if (!masked || length == 0) {
    if (masked) {
      const WebSocketMaskKey key = next_websocket_mask_key();
      out.write_bytes(key);
    }
    if (length == 0) {
      ctx.write(std::move(out), std::move(promise));
      return;
    }
    ctx.write(std::move(out));
    ctx.write(std::move(frame.payload), std::move(promise));
    return;
  }
  const WebSocketMaskKey key = next_websocket_mask_key();
  out.write_bytes(key);
  if (copy_payload) {
    websocket_mask_copy(frame.payload.readable_span(), out.writable_span(), key);
    out.set_writer_index(out.writer_index() + length);
    ctx.write(std::move(out), std::move(promise));
    return;
  }
  ByteBuf& payload = frame.payload;
  websocket_mask(std::span<std::byte>(payload.data() + payload.reader_index(), length), key);
  ctx.write(std::move(out));
  ctx.write(std::move(payload), std::move(promise));
}

}  // namespace trellis::websocket
