// DelimiterBasedFrameDecoder (see delimiter_based_frame_decoder.hpp).
#include <trellis/codec/delimiter_based_frame_decoder.hpp>

#include <algorithm>
#include <limits>
#include <string_view>

namespace trellis::codec {

std::vector<std::string> line_delimiter() { return {"\r\n", "\n"}; }
std::vector<std::string> nul_delimiter() { return {std::string(1, '\0')}; }

DelimiterBasedFrameDecoder::DelimiterBasedFrameDecoder(std::size_t max_frame_length,
                                                       bool strip_delimiter, bool fail_fast,
                                                       std::vector<std::string> delimiters)
    : delimiters_(std::move(delimiters)),
      max_frame_length_(max_frame_length),
      strip_delimiter_(strip_delimiter),
      fail_fast_(fail_fast) {
  if (max_frame_length == 0) throw InvalidArgumentError("max_frame_length must be > 0");
  if (delimiters_.empty()) throw InvalidArgumentError("no delimiter given");
  for (const auto& d : delimiters_) {
    if (d.empty()) throw InvalidArgumentError("empty delimiter");
  }
  const bool lines =
      delimiters_.size() == 2 && ((delimiters_[0] == "\r\n" && delimiters_[1] == "\n") ||
                                  (delimiters_[0] == "\n" && delimiters_[1] == "\r\n"));
  if (lines) {
    line_decoder_ =
        std::make_unique<LineBasedFrameDecoder>(max_frame_length, strip_delimiter, fail_fast);
  }
}

DelimiterBasedFrameDecoder::~DelimiterBasedFrameDecoder() = default;

void DelimiterBasedFrameDecoder::fail(std::size_t frame_length, std::int64_t position) const {
  if (frame_length > 0) {
    throw TooLongFrameError("frame length exceeds " + std::to_string(max_frame_length_) + ": " +
                                std::to_string(frame_length) + " - discarded",
                            position);
  }
  throw TooLongFrameError(
      "frame length exceeds " + std::to_string(max_frame_length_) + " - discarding", position);
}

void DelimiterBasedFrameDecoder::decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
  if (line_decoder_) {
    line_decoder_->decode(ctx, in, out);
    return;
  }
  const auto span = in.readable_span();
  const std::string_view bytes(reinterpret_cast<const char*>(span.data()), span.size());
  std::size_t min_frame_length = std::numeric_limits<std::size_t>::max();
  const std::string* min_delim = nullptr;
  for (const auto& d : delimiters_) {
    // No delimiter lies wholly in the first scanned_ bytes: one of d.size() bytes starts at
    // scanned_ - (d.size() - 1) at the earliest. So each read looks at the new bytes (and that
    // overlap) only, and the earliest delimiter is still the one found.
    const std::size_t from = scanned_ >= d.size() ? scanned_ - (d.size() - 1) : 0;
    bytes_examined_ += bytes.size() - from;
    const std::size_t at = bytes.find(d, from);
    if (at != std::string_view::npos && at < min_frame_length) {
      min_frame_length = at;
      min_delim = &d;
    }
  }
  // Every branch below either consumes up to a delimiter or everything, or waits for more bytes
  // with all of them searched.
  scanned_ = min_delim == nullptr ? bytes.size() : 0;
  if (min_delim != nullptr) {
    const std::size_t delim_length = min_delim->size();
    if (discarding_too_long_frame_) {
      // The end of the frame being discarded.
      const std::int64_t position =
          stream_position(in) - static_cast<std::int64_t>(too_long_frame_length_);
      discarding_too_long_frame_ = false;
      in.skip_bytes(min_frame_length + delim_length);
      const std::size_t too_long = too_long_frame_length_ + min_frame_length;
      too_long_frame_length_ = 0;
      if (!fail_fast_) fail(too_long, position);
      return;
    }
    if (min_frame_length > max_frame_length_) {
      const std::int64_t position = stream_position(in);
      in.skip_bytes(min_frame_length + delim_length);
      fail(min_frame_length, position);
    }
    if (strip_delimiter_) {
      out.emplace_back(in.read_slice(min_frame_length));
      in.skip_bytes(delim_length);
    } else {
      out.emplace_back(in.read_slice(min_frame_length + delim_length));
    }
    return;
  }
  if (!discarding_too_long_frame_) {
    if (in.readable_bytes() > max_frame_length_) {
      const std::int64_t position = stream_position(in);
      too_long_frame_length_ = in.readable_bytes();
      in.skip_bytes(in.readable_bytes());
      scanned_ = 0;
      discarding_too_long_frame_ = true;
      if (fail_fast_) fail(0, position);
    }
  } else {
    too_long_frame_length_ += in.readable_bytes();
    in.skip_bytes(in.readable_bytes());
    scanned_ = 0;
  }
}

}  // namespace trellis::codec
