// LengthFieldPrepender (see length_field_prepender.hpp).
#include <trellis/codec/length_field_prepender.hpp>

#include <string>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>

namespace trellis::codec {

LengthFieldPrepender::LengthFieldPrepender(std::size_t length_field_length,
                                           std::int64_t length_adjustment,
                                           bool length_includes_length_field_length,
                                           std::endian byte_order)
    : byte_order_(byte_order),
      length_field_length_(length_field_length),
      length_adjustment_(length_adjustment),
      length_includes_length_field_length_(length_includes_length_field_length) {
  if (length_field_length != 1 && length_field_length != 2 && length_field_length != 3 &&
      length_field_length != 4 && length_field_length != 8) {
    throw InvalidArgumentError("length_field_length must be 1, 2, 3, 4 or 8: " +
                               std::to_string(length_field_length));
  }
}

void LengthFieldPrepender::encode(ChannelHandlerContext& ctx, ByteBuf msg,
                                  std::vector<Message>& out) {
  std::int64_t length = static_cast<std::int64_t>(msg.readable_bytes()) + length_adjustment_;
  if (length_includes_length_field_length_) {
    length += static_cast<std::int64_t>(length_field_length_);
  }
  if (length < 0) {
    throw EncoderError("adjusted frame length (" + std::to_string(length) + ") is less than zero");
  }
  const auto value = static_cast<std::uint64_t>(length);
  const bool big = byte_order_ == std::endian::big;
  if (length_field_length_ < 8 && value >= (std::uint64_t{1} << (8 * length_field_length_))) {
    throw EncoderError("length does not fit into a " + std::to_string(length_field_length_) +
                       "-byte length field: " + std::to_string(length));
  }
  ByteBuf header = ctx.alloc().buffer(length_field_length_);
  switch (length_field_length_) {
    case 1:
      header.write_u8(static_cast<std::uint8_t>(value));
      break;
    case 2:
      big ? header.write_u16(static_cast<std::uint16_t>(value))
          : header.write_u16_le(static_cast<std::uint16_t>(value));
      break;
    case 3:
      if (big) {
        header.write_u8(static_cast<std::uint8_t>(value >> 16));
        header.write_u16(static_cast<std::uint16_t>(value));
      } else {
        header.write_u16_le(static_cast<std::uint16_t>(value));
        header.write_u8(static_cast<std::uint8_t>(value >> 16));
      }
      break;
    case 4:
      big ? header.write_u32(static_cast<std::uint32_t>(value))
          : header.write_u32_le(static_cast<std::uint32_t>(value));
      break;
    default:
      big ? header.write_u64(value) : header.write_u64_le(value);
      break;
  }
  out.emplace_back(std::move(header));
  out.emplace_back(std::move(msg));
}

}  // namespace trellis::codec
