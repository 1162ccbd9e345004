// FixedLengthFrameDecoder (see fixed_length_frame_decoder.hpp).
#include <trellis/codec/fixed_length_frame_decoder.hpp>

namespace trellis::codec {

FixedLengthFrameDecoder::FixedLengthFrameDecoder(std::size_t frame_length)
    : frame_length_(frame_length) {
  if (frame_length == 0) throw InvalidArgumentError("frame_length must be > 0");
}

void FixedLengthFrameDecoder::decode(ChannelHandlerContext&, ByteBuf& in, Out& out) {
  if (in.readable_bytes() >= frame_length_) out.emplace_back(in.read_slice(frame_length_));
}

}  // namespace trellis::codec
