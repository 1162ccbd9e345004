// ProtobufVarint32FrameDecoder: splits the stream into frames by a base-128 varint32 length in
// front of each (protobuf's length-delimited framing; no protobuf dependency).
#pragma once

#include <cstddef>
#include <cstdint>

#include <trellis/codec/byte_to_message_decoder.hpp>

namespace trellis::codec {

/// Splits the stream into frames by a base-128 varint32 length in front of each (Netty's
/// ProtobufVarint32FrameDecoder, with a limit). The frames come out without their header, as
/// slices of the cumulation (no copy); a frame is decoded only once all of it is there, and an
/// empty frame (length 0) comes out as an empty buffer. On the channel's loop; not sharable.
///
/// Errors (thrown from decode, so they reach exception_caught as DecoderError):
/// - a length above max_frame_length: TooLongFrameError as soon as the length is read; the
///   frame's bytes are then skipped (over several reads if need be) and decoding goes on after it;
/// - a corrupt length (a varint of more than 5 bytes, or above 2^31 - 1): DecoderError. A varint
///   stream cannot be resynchronised, so every later byte is dropped; close the channel.
class ProtobufVarint32FrameDecoder : public ByteToMessageDecoder {
 public:
  /// The default limit: 4 MiB (gRPC's default maximum message size).
  static constexpr std::size_t kDefaultMaxFrameLength = std::size_t{4} << 20;

  /// A decoder of frames up to `max_frame_length` bytes (not counting the header);
  /// InvalidArgumentError for 0.
  explicit ProtobufVarint32FrameDecoder(std::size_t max_frame_length = kDefaultMaxFrameLength);

  /// The limit.
  std::size_t max_frame_length() const noexcept { return max_frame_length_; }

 protected:
  /// Cuts the next frame from `in` when its header and body are all there.
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;

 private:
  std::size_t max_frame_length_;
  std::uint64_t bytes_to_discard_ = 0;  // of a too long frame
  bool corrupt_ = false;
};

}  // namespace trellis::codec
