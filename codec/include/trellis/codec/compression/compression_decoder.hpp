// CompressionDecoder: the inbound decoder behind ZlibDecoder, BrotliDecoder and ZstdDecoder. It
// decompresses one stream into ByteBufs of bounded size, within DecompressionLimits.
#pragma once

#include <memory>

#include <trellis/codec/byte_to_message_decoder.hpp>
#include <trellis/codec/compression/stream_decompressor.hpp>

namespace trellis::codec {

/// Failures are DecoderErrors: corrupt input; output beyond the limits (DecompressionLimitError,
/// raised after at most one chunk past the limit, without holding the output); bytes after the end
/// of the stream (a second gzip member or zstd frame included: one stream per channel); and a
/// stream cut short when the input ends (channel inactive or input shut down).
class CompressionDecoder : public ByteToMessageDecoder {
 public:
  CompressionDecoder(std::unique_ptr<StreamDecompressor> decompressor, DecompressionLimits limits);

  /// The end of the compressed stream was read.
  bool is_finished() const noexcept { return stream_.is_finished(); }
  /// An error was raised; the rest of the input is discarded.
  bool is_failed() const noexcept { return failed_; }
  std::uint64_t total_in() const noexcept { return stream_.total_in(); }
  std::uint64_t total_out() const noexcept { return stream_.total_out(); }

 protected:
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;
  void decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;

 private:
  BoundedDecompression stream_;
  bool failed_ = false;  // an error was raised: later input is dropped
};

}  // namespace trellis::codec
