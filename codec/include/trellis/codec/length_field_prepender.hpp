// LengthFieldPrepender: writes a length field in front of each outbound ByteBuf (the encoder
// that pairs with LengthFieldBasedFrameDecoder).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <trellis/pipeline/message_to_message_encoder.hpp>

namespace trellis::codec {

/// Each ByteBuf goes out as two messages: a small buffer with the length field, then the buffer
/// itself, untouched (no copy of the body; the transport gathers both into one writev).
/// The length is readable_bytes() + length_adjustment (+ length_field_length when
/// length_includes_length_field_length); EncoderError when it is negative or does not fit the
/// field. InvalidArgumentError for a field length other than 1, 2, 3, 4 or 8.
class LengthFieldPrepender : public MessageToMessageEncoder<ByteBuf> {
 public:
  explicit LengthFieldPrepender(std::size_t length_field_length, std::int64_t length_adjustment = 0,
                                bool length_includes_length_field_length = false,
                                std::endian byte_order = std::endian::big);

  bool is_sharable() const noexcept override { return true; }

 protected:
  void encode(ChannelHandlerContext& ctx, ByteBuf msg, std::vector<Message>& out) override;

 private:
  std::endian byte_order_;
  std::size_t length_field_length_;
  std::int64_t length_adjustment_;
  bool length_includes_length_field_length_;
};

}  // namespace trellis::codec
