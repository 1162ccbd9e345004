// LengthFieldBasedFrameDecoder: splits the stream into frames by a length field in each frame's
// header (Netty's semantics, limits and arguments, including discard mode).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include <trellis/codec/byte_to_message_decoder.hpp>

namespace trellis::codec {

/// A frame is [length_field_offset bytes][length field][...]: the length field (1, 2, 3, 4 or 8
/// bytes, in `byte_order`) plus length_adjustment is the number of bytes after the length field;
/// the first initial_bytes_to_strip bytes of the frame are dropped and the rest is the output
/// frame (a slice of the cumulation). See Netty's javadoc; every example there is in the tests.
///
/// A frame longer than max_frame_length is skipped (discard mode, possibly over several reads)
/// and a TooLongFrameError is thrown: when its length is read if fail_fast, else once it has been
/// skipped. A negative length field (8 bytes), an adjusted length that ends inside the length
/// field or one shorter than initial_bytes_to_strip is a DecoderError (the offending bytes are
/// skipped, so decoding goes on after them).
class LengthFieldBasedFrameDecoder : public ByteToMessageDecoder {
 public:
  LengthFieldBasedFrameDecoder(std::size_t max_frame_length, std::size_t length_field_offset,
                               std::size_t length_field_length, std::int64_t length_adjustment = 0,
                               std::size_t initial_bytes_to_strip = 0, bool fail_fast = true,
                               std::endian byte_order = std::endian::big);

 protected:
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;
  /// The length field's value; override for an unusual encoding (varints, ASCII digits...).
  virtual std::int64_t get_unadjusted_frame_length(const ByteBuf& in, std::size_t offset,
                                                   std::size_t length, std::endian order) const;

 private:
  void exceeded_frame_length(ByteBuf& in, std::uint64_t frame_length);
  void discard_too_long_frame(ByteBuf& in);
  void fail_if_necessary(bool first_detection);
  [[noreturn]] void fail(std::uint64_t frame_length) const;

  std::endian byte_order_;
  std::size_t max_frame_length_;
  std::size_t length_field_offset_;
  std::size_t length_field_length_;
  std::size_t length_field_end_offset_;
  std::int64_t length_adjustment_;
  std::size_t initial_bytes_to_strip_;
  bool fail_fast_;
  bool discarding_too_long_frame_ = false;
  std::uint64_t too_long_frame_length_ = 0;
  std::uint64_t bytes_to_discard_ = 0;
  std::int64_t too_long_position_ = -1;
  std::int64_t frame_length_ = -1;  // of the frame whose header was read, -1 between frames
};

}  // namespace trellis::codec
