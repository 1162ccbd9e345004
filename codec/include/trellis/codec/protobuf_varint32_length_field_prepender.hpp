// ProtobufVarint32LengthFieldPrepender: writes a base-128 varint32 length in front of each
// outbound ByteBuf (the encoder that pairs with ProtobufVarint32FrameDecoder).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <trellis/pipeline/message_to_message_encoder.hpp>

namespace trellis::codec {

/// Each ByteBuf goes out as two messages: a buffer of 1 to 5 bytes with the varint32 length,
/// then the buffer itself, untouched (no copy of the body; the transport gathers both into one
/// writev). Netty's ProtobufVarint32LengthFieldPrepender. EncoderError for a body longer than
/// 2^31 - 1 bytes. Sharable (no state).
class ProtobufVarint32LengthFieldPrepender : public MessageToMessageEncoder<ByteBuf> {
 public:
  /// How many bytes the varint32 encoding of `value` takes (1 to 5).
  static constexpr std::size_t varint32_size(std::uint32_t value) noexcept {
    std::size_t n = 1;
    while (value >= 0x80) {
      value >>= 7;
      ++n;
    }
    return n;
  }

  /// True: the prepender keeps no state.
  bool is_sharable() const noexcept override { return true; }

 protected:
  /// Appends the varint header, then `msg`, to `out`.
  void encode(ChannelHandlerContext& ctx, ByteBuf msg, std::vector<Message>& out) override;
};

}  // namespace trellis::codec
