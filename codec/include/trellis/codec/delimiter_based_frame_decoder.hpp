// DelimiterBasedFrameDecoder: splits the stream at any of several delimiters (Netty's semantics
// and limits), plus the usual delimiter sets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <trellis/codec/byte_to_message_decoder.hpp>
#include <trellis/codec/line_based_frame_decoder.hpp>

namespace trellis::codec {

/// {"\r\n", "\n"}: with exactly these, the decoder works like LineBasedFrameDecoder.
std::vector<std::string> line_delimiter();
/// {"\0"}: NUL-terminated frames (Flash XML socket, STOMP).
std::vector<std::string> nul_delimiter();

/// The frame ends at the delimiter that comes first in the stream (the shortest frame). A frame
/// longer than max_frame_length is discarded up to and including its delimiter, and a
/// TooLongFrameError is fired to exception_caught: at once when fail_fast (the default, as in
/// Netty), else once the delimiter is found. InvalidArgumentError for no delimiter or an empty one.
class DelimiterBasedFrameDecoder : public ByteToMessageDecoder {
 public:
  DelimiterBasedFrameDecoder(std::size_t max_frame_length, std::vector<std::string> delimiters)
      : DelimiterBasedFrameDecoder(max_frame_length, true, true, std::move(delimiters)) {}
  DelimiterBasedFrameDecoder(std::size_t max_frame_length, bool strip_delimiter,
                             std::vector<std::string> delimiters)
      : DelimiterBasedFrameDecoder(max_frame_length, strip_delimiter, true, std::move(delimiters)) {
  }
  DelimiterBasedFrameDecoder(std::size_t max_frame_length, bool strip_delimiter, bool fail_fast,
                             std::vector<std::string> delimiters);
  ~DelimiterBasedFrameDecoder() override;

 protected:
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;

 private:
  friend struct FrameScanProbe;  // frame_decoders_test.cpp reads bytes_examined_; nothing else

  void fail(std::size_t frame_length, std::int64_t position) const;

  std::vector<std::string> delimiters_;
  std::size_t max_frame_length_;
  bool strip_delimiter_;
  bool fail_fast_;
  bool discarding_too_long_frame_ = false;
  std::size_t too_long_frame_length_ = 0;
  // Bytes after the reader index already searched without finding a delimiter: an offset from
  // the reader index, not an index (ByteToMessageDecoder may discard read bytes between calls).
  std::size_t scanned_ = 0;
  // Bytes handed to the delimiter searches so far: what the tests check stays linear in the
  // input (one add per search).
  std::uint64_t bytes_examined_ = 0;
  // Set when the delimiters are exactly the line delimiters: the faster line decoder does it.
  std::unique_ptr<LineBasedFrameDecoder> line_decoder_;
};

}  // namespace trellis::codec
