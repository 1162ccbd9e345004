// FixedLengthFrameDecoder: splits the stream into frames of a fixed number of bytes.
#pragma once

#include <cstddef>

#include <trellis/codec/byte_to_message_decoder.hpp>

namespace trellis::codec {

/// Frames are slices of the cumulation (no copy). InvalidArgumentError for a length of 0.
class FixedLengthFrameDecoder : public ByteToMessageDecoder {
 public:
  explicit FixedLengthFrameDecoder(std::size_t frame_length);

  std::size_t frame_length() const noexcept { return frame_length_; }

 protected:
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;

 private:
  std::size_t frame_length_;
};

}  // namespace trellis::codec
