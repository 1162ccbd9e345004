// BoundedDecompression: a StreamDecompressor driven within DecompressionLimits.
#include <string>
#include <utility>

#include <trellis/codec/compression/stream_decompressor.hpp>

namespace trellis::codec {

BoundedDecompression::BoundedDecompression(std::unique_ptr<StreamDecompressor> engine,
                                           DecompressionLimits limits)
    : engine_(std::move(engine)), limits_(limits) {
  if (limits_.chunk_size == 0) limits_.chunk_size = DecompressionLimits{}.chunk_size;
}

ByteBuf BoundedDecompression::next(ByteBufAllocator& alloc, std::span<const std::byte>& in) {
  if (finished_) {
    if (!in.empty()) throw DecoderError("bytes after the end of the compressed stream");
    return ByteBuf();
  }
  for (;;) {
    if (!chunk_.data()) chunk_ = alloc.buffer(limits_.chunk_size, limits_.chunk_size);
    auto room = chunk_.writable_span();
    const StreamDecompressor::Step step = engine_->decompress(in, room);
    in = in.subspan(step.consumed);
    total_in_ += step.consumed;
    total_out_ += step.produced;
    chunk_.set_writer_index(chunk_.writer_index() + step.produced);
    check_limits();
    if (step.finished) {
      finished_ = true;  // bytes after the end fail the next call, after this output
      break;
    }
    if (!chunk_.is_writable()) break;  // full: hand it out; more may be pending
    // Room left in the output: the decompressor has nothing more to give without more input.
    if (in.empty() || (step.consumed == 0 && step.produced == 0)) break;
  }
  if (!chunk_.is_readable()) return ByteBuf();
  return std::exchange(chunk_, ByteBuf());
}

void BoundedDecompression::check_limits() const {
  if (total_out_ > limits_.max_output_bytes) {
    throw DecompressionLimitError("decompressed output exceeds " +
                                  std::to_string(limits_.max_output_bytes) + " bytes");
  }
  if (limits_.max_ratio > 0 && total_out_ > limits_.ratio_grace_bytes &&
      static_cast<double>(total_out_) > limits_.max_ratio * static_cast<double>(total_in_)) {
    throw DecompressionLimitError(
        "decompression ratio exceeds " + std::to_string(static_cast<long long>(limits_.max_ratio)) +
        " (" + std::to_string(total_out_) + " bytes from " + std::to_string(total_in_) + ")");
  }
}

void BoundedDecompression::reset() {
  engine_->reset();
  chunk_ = ByteBuf();
  total_in_ = total_out_ = 0;
  finished_ = false;
}

}  // namespace trellis::codec
