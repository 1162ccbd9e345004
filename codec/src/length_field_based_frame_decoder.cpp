// LengthFieldBasedFrameDecoder (see length_field_based_frame_decoder.hpp).
#include <trellis/codec/length_field_based_frame_decoder.hpp>

#include <algorithm>
#include <limits>
#include <string>

namespace trellis::codec {

LengthFieldBasedFrameDecoder::LengthFieldBasedFrameDecoder(std::size_t max_frame_length,
                                                           std::size_t length_field_offset,
                                                           std::size_t length_field_length,
                                                           std::int64_t length_adjustment,
                                                           std::size_t initial_bytes_to_strip,
                                                           bool fail_fast, std::endian byte_order)
    : byte_order_(byte_order),
      max_frame_length_(max_frame_length),
      length_field_offset_(length_field_offset),
      length_field_length_(length_field_length),
      length_field_end_offset_(length_field_offset + length_field_length),
      length_adjustment_(length_adjustment),
      initial_bytes_to_strip_(initial_bytes_to_strip),
      fail_fast_(fail_fast) {
  if (max_frame_length == 0) throw InvalidArgumentError("max_frame_length must be > 0");
  if (length_field_length != 1 && length_field_length != 2 && length_field_length != 3 &&
      length_field_length != 4 && length_field_length != 8) {
    throw InvalidArgumentError("length_field_length must be 1, 2, 3, 4 or 8: " +
                               std::to_string(length_field_length));
  }
  if (max_frame_length > ByteBuf::kMaxCapacity) {
    throw InvalidArgumentError("max_frame_length exceeds the largest buffer");
  }
  if (length_field_length > max_frame_length ||
      length_field_offset > max_frame_length - length_field_length) {
    throw InvalidArgumentError("max_frame_length (" + std::to_string(max_frame_length) +
                               ") must be >= length_field_offset (" +
                               std::to_string(length_field_offset) + ") + length_field_length (" +
                               std::to_string(length_field_length) + ")");
  }
}

std::int64_t LengthFieldBasedFrameDecoder::get_unadjusted_frame_length(const ByteBuf& in,
                                                                       std::size_t offset,
                                                                       std::size_t length,
                                                                       std::endian order) const {
  const bool big = order == std::endian::big;
  switch (length) {
    case 1:
      return in.get_u8(offset);
    case 2:
      return big ? in.get_u16(offset) : in.get_u16_le(offset);
    case 3: {
      const std::uint32_t b0 = in.get_u8(offset);
      const std::uint32_t b1 = in.get_u8(offset + 1);
      const std::uint32_t b2 = in.get_u8(offset + 2);
      return big ? (b0 << 16 | b1 << 8 | b2) : (b2 << 16 | b1 << 8 | b0);
    }
    case 4:
      return big ? in.get_u32(offset) : in.get_u32_le(offset);
    default:
      return big ? in.get_i64(offset) : in.get_i64_le(offset);
  }
}

void LengthFieldBasedFrameDecoder::decode(ChannelHandlerContext&, ByteBuf& in, Out& out) {
  if (frame_length_ < 0) {
    if (discarding_too_long_frame_) discard_too_long_frame(in);
    if (in.readable_bytes() < length_field_end_offset_) return;
    const std::int64_t position = stream_position(in);
    std::int64_t length = get_unadjusted_frame_length(in, in.reader_index() + length_field_offset_,
                                                      length_field_length_, byte_order_);
    if (length < 0) {
      in.skip_bytes(length_field_end_offset_);
      throw DecoderError("negative pre-adjustment length field: " + std::to_string(length),
                         position);
    }
    const auto end_offset = static_cast<std::int64_t>(length_field_end_offset_);
    std::int64_t adjusted = 0;
    if (__builtin_add_overflow(length, length_adjustment_, &adjusted) ||
        __builtin_add_overflow(adjusted, end_offset, &adjusted)) {
      // Only a huge length field overflows (the adjustment is small): too long, not corrupt.
      adjusted = std::numeric_limits<std::int64_t>::max();
    }
    if (adjusted < end_offset) {
      in.skip_bytes(length_field_end_offset_);
      throw DecoderError(
          "adjusted frame length (" + std::to_string(adjusted) +
              ") is less than length_field_end_offset: " + std::to_string(length_field_end_offset_),
          position);
    }
    if (static_cast<std::uint64_t>(adjusted) > max_frame_length_) {
      too_long_position_ = position;
      exceeded_frame_length(in, static_cast<std::uint64_t>(adjusted));
      return;
    }
    frame_length_ = adjusted;
  }
  const auto frame_length = static_cast<std::size_t>(frame_length_);
  if (in.readable_bytes() < frame_length) return;
  if (initial_bytes_to_strip_ > frame_length) {
    const std::int64_t position = stream_position(in);
    in.skip_bytes(frame_length);
    frame_length_ = -1;
    throw DecoderError(
        "adjusted frame length (" + std::to_string(frame_length) +
            ") is less than initial_bytes_to_strip: " + std::to_string(initial_bytes_to_strip_),
        position);
  }
  in.skip_bytes(initial_bytes_to_strip_);
  out.emplace_back(in.read_slice(frame_length - initial_bytes_to_strip_));
  frame_length_ = -1;
}

void LengthFieldBasedFrameDecoder::exceeded_frame_length(ByteBuf& in, std::uint64_t frame_length) {
  too_long_frame_length_ = frame_length;
  if (frame_length <= in.readable_bytes()) {
    // The whole frame is here already.
    in.skip_bytes(static_cast<std::size_t>(frame_length));
  } else {
    discarding_too_long_frame_ = true;
    bytes_to_discard_ = frame_length - in.readable_bytes();
    in.skip_bytes(in.readable_bytes());
  }
  fail_if_necessary(true);
}

void LengthFieldBasedFrameDecoder::discard_too_long_frame(ByteBuf& in) {
  const auto n =
      static_cast<std::size_t>(std::min<std::uint64_t>(bytes_to_discard_, in.readable_bytes()));
  in.skip_bytes(n);
  bytes_to_discard_ -= n;
  fail_if_necessary(false);
}

void LengthFieldBasedFrameDecoder::fail_if_necessary(bool first_detection) {
  if (bytes_to_discard_ == 0) {
    // The frame is skipped: back to normal.
    const std::uint64_t too_long = too_long_frame_length_;
    too_long_frame_length_ = 0;
    discarding_too_long_frame_ = false;
    if (!fail_fast_ || first_detection) fail(too_long);
  } else if (fail_fast_ && first_detection) {
    fail(too_long_frame_length_);
  }
}

void LengthFieldBasedFrameDecoder::fail(std::uint64_t frame_length) const {
  throw TooLongFrameError("adjusted frame length exceeds " + std::to_string(max_frame_length_) +
                              ": " + std::to_string(frame_length) +
                              (discarding_too_long_frame_ ? " - discarding" : " - discarded"),
                          too_long_position_);
}

}  // namespace trellis::codec
