// ProtobufVarint32LengthFieldPrepender (see protobuf_varint32_length_field_prepender.hpp).
#include <trellis/codec/protobuf_varint32_length_field_prepender.hpp>

#include <limits>
#include <string>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>

namespace trellis::codec {

void ProtobufVarint32LengthFieldPrepender::encode(ChannelHandlerContext& ctx, ByteBuf msg,
                                                  std::vector<Message>& out) {
  const std::size_t length = msg.readable_bytes();
  if (length > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    throw EncoderError("body too long for a varint32 length: " + std::to_string(length));
  }
  auto value = static_cast<std::uint32_t>(length);
  ByteBuf header = ctx.alloc().buffer(varint32_size(value));
  while (value >= 0x80) {
    header.write_u8(static_cast<std::uint8_t>(value | 0x80));
    value >>= 7;
  }
  header.write_u8(static_cast<std::uint8_t>(value));
  out.emplace_back(std::move(header));
  out.emplace_back(std::move(msg));
}

}  // namespace trellis::codec
