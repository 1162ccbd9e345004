// ProtobufVarint32FrameDecoder (see protobuf_varint32_frame_decoder.hpp).
#include <trellis/codec/protobuf_varint32_frame_decoder.hpp>

#include <algorithm>
#include <limits>
#include <string>

namespace trellis::codec {

ProtobufVarint32FrameDecoder::ProtobufVarint32FrameDecoder(std::size_t max_frame_length)
    : max_frame_length_(max_frame_length) {
  if (max_frame_length == 0) throw InvalidArgumentError("max_frame_length must be > 0");
}

void ProtobufVarint32FrameDecoder::decode(ChannelHandlerContext& /*ctx*/, ByteBuf& in, Out& out) {
  if (corrupt_) {
    in.skip_bytes(in.readable_bytes());
    return;
  }
  if (bytes_to_discard_ > 0) {
    const auto n =
        static_cast<std::size_t>(std::min<std::uint64_t>(bytes_to_discard_, in.readable_bytes()));
    in.skip_bytes(n);
    bytes_to_discard_ -= n;
    return;  // the loop calls again if bytes are left
  }
  // Peek at the varint; nothing is consumed until the whole frame is there.
  const std::size_t start = in.reader_index();
  const std::size_t readable = in.readable_bytes();
  std::uint64_t length = 0;
  std::size_t header = 0;
  for (;;) {
    if (header == readable) return;  // the header is incomplete
    const std::uint8_t b = in.get_u8(start + header);
    length |= static_cast<std::uint64_t>(b & 0x7f) << (7 * header);
    ++header;
    if ((b & 0x80) == 0) break;
    if (header == 5) {
      corrupt_ = true;
      in.skip_bytes(readable);
      throw DecoderError("malformed varint32 length: more than 5 bytes");
    }
  }
  if (length > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
    corrupt_ = true;
    in.skip_bytes(readable);
    throw DecoderError("varint32 length out of range: " + std::to_string(length));
  }
  if (length > max_frame_length_) {
    in.skip_bytes(header);
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(length, in.readable_bytes()));
    in.skip_bytes(n);
    bytes_to_discard_ = length - n;
    throw TooLongFrameError("frame length " + std::to_string(length) + " exceeds " +
                            std::to_string(max_frame_length_));
  }
  if (readable - header < length) return;  // the body is incomplete
  in.skip_bytes(header);
  out.emplace_back(in.read_slice(static_cast<std::size_t>(length)));
}

}  // namespace trellis::codec
