// LineBasedFrameDecoder (see line_based_frame_decoder.hpp).
#include <trellis/codec/line_based_frame_decoder.hpp>

#include <exception>
#include <string>

namespace trellis::codec {

LineBasedFrameDecoder::LineBasedFrameDecoder(std::size_t max_length, bool strip_delimiter,
                                             bool fail_fast)
    : max_length_(max_length), strip_delimiter_(strip_delimiter), fail_fast_(fail_fast) {
  if (max_length == 0) throw InvalidArgumentError("max_length must be > 0");
}

std::int64_t LineBasedFrameDecoder::find_end_of_line(const ByteBuf& in) {
  const std::size_t total = in.readable_bytes();
  bytes_examined_ += total - offset_;
  std::int64_t i = in.index_of(in.reader_index() + offset_, in.writer_index(), '\n');
  if (i >= 0) {
    offset_ = 0;
    if (static_cast<std::size_t>(i) > in.reader_index() &&
        in.get_u8(static_cast<std::size_t>(i) - 1) == '\r') {
      --i;
    }
  } else {
    // Next time, scan only what arrived since.
    offset_ = total;
  }
  return i;
}

void LineBasedFrameDecoder::fail(ChannelHandlerContext& ctx, std::size_t length,
                                 std::int64_t position) const {
  // Fired, not thrown (Netty's behaviour): the lines after the long one are still decoded.
  const std::string what = fail_fast_ ? "line length exceeds " + std::to_string(max_length_) +
                                            ": over " + std::to_string(length) + " - discarding"
                                      : "line length exceeds " + std::to_string(max_length_) +
                                            ": " + std::to_string(length) + " - discarded";
  ctx.fire_exception_caught(std::make_exception_ptr(TooLongFrameError(what, position)));
}

void LineBasedFrameDecoder::decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
  const std::int64_t eol = find_end_of_line(in);
  const std::size_t reader = in.reader_index();
  if (!discarding_) {
    if (eol >= 0) {
      const auto at = static_cast<std::size_t>(eol);
      const std::size_t length = at - reader;
      const std::size_t delim_length = in.get_u8(at) == '\r' ? 2 : 1;
      if (length > max_length_) {
        const std::int64_t position = stream_position(in);
        in.set_reader_index(at + delim_length);
        fail(ctx, length, position);
        return;
      }
      if (strip_delimiter_) {
        out.emplace_back(in.read_slice(length));
        in.skip_bytes(delim_length);
      } else {
        out.emplace_back(in.read_slice(length + delim_length));
      }
      return;
    }
    const std::size_t length = in.readable_bytes();
    if (length > max_length_) {
      const std::int64_t position = stream_position(in);
      discarded_bytes_ = length;
      in.set_reader_index(in.writer_index());
      discarding_ = true;
      offset_ = 0;
      if (fail_fast_) fail(ctx, discarded_bytes_, position);
    }
    return;
  }
  if (eol >= 0) {
    const auto at = static_cast<std::size_t>(eol);
    const std::size_t length = discarded_bytes_ + at - reader;
    const std::size_t delim_length = in.get_u8(at) == '\r' ? 2 : 1;
    const std::int64_t position = stream_position(in) - static_cast<std::int64_t>(discarded_bytes_);
    in.set_reader_index(at + delim_length);
    discarded_bytes_ = 0;
    discarding_ = false;
    if (!fail_fast_) fail(ctx, length, position);
  } else {
    discarded_bytes_ += in.readable_bytes();
    in.set_reader_index(in.writer_index());
    offset_ = 0;
  }
}

}  // namespace trellis::codec
