// FixedLengthFrameDecoder: splits the stream into frames of a fixed number of bytes.
#pragma once

#include <cstddef>

#include <trellis/codec/byte_to_message_decoder.hpp>

namespace trellis::codec {

/// Splits the stream into frames of frame_length() bytes each: slices of the cumulation (no
/// copy). On the channel's loop; not sharable.
class FixedLengthFrameDecoder : public ByteToMessageDecoder {
 public:
  /// Frames of `frame_length` bytes; InvalidArgumentError for a length of 0.
  explicit FixedLengthFrameDecoder(std::size_t frame_length);

  /// The length of every frame.
  std::size_t frame_length() const noexcept { return frame_length_; }

 protected:
  /// Cuts the next frame from `in` when enough bytes are there.
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;

 private:
  std::size_t frame_length_;
};

}  // namespace trellis::codec
