// LineBasedFrameDecoder: splits the stream at "\n" and "\r\n" (Netty's semantics and limits).
#pragma once

#include <cstddef>
#include <cstdint>

#include <trellis/codec/byte_to_message_decoder.hpp>

namespace trellis::codec {

/// Frames are slices of the cumulation, without the delimiter when strip_delimiter.
/// A line longer than max_length (delimiter excluded) is discarded up to and including its
/// delimiter, and a TooLongFrameError is fired to exception_caught (decoding goes on with the next
/// line): as soon as the limit is passed when fail_fast, else once the delimiter is seen.
class LineBasedFrameDecoder : public ByteToMessageDecoder {
 public:
  explicit LineBasedFrameDecoder(std::size_t max_length, bool strip_delimiter = true,
                                 bool fail_fast = false);

 protected:
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;

 private:
  friend class DelimiterBasedFrameDecoder;
  friend struct FrameScanProbe;  // frame_decoders_test.cpp reads bytes_examined_; nothing else

  // Index of the line end ('\r' of "\r\n", else '\n'), or -1.
  std::int64_t find_end_of_line(const ByteBuf& in);
  void fail(ChannelHandlerContext& ctx, std::size_t length, std::int64_t position) const;

  std::size_t max_length_;
  bool strip_delimiter_;
  bool fail_fast_;
  bool discarding_ = false;
  std::size_t discarded_bytes_ = 0;
  std::size_t offset_ = 0;  // bytes already scanned without finding '\n'
  // Bytes handed to the search for '\n' so far: what the tests check stays linear in the input
  // (one add per search).
  std::uint64_t bytes_examined_ = 0;
};

}  // namespace trellis::codec
