// CompressionDecoder: decompress one stream into bounded ByteBufs.
#include <trellis/codec/compression/compression_decoder.hpp>

#include <utility>

namespace trellis::codec {

CompressionDecoder::CompressionDecoder(std::unique_ptr<StreamDecompressor> decompressor,
                                       DecompressionLimits limits)
    : stream_(std::move(decompressor), limits) {}

void CompressionDecoder::decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
  if (failed_) {
    in.skip_bytes(in.readable_bytes());  // the stream is unusable after an error
    return;
  }
  std::span<const std::byte> rest = in.readable_span();
  const std::size_t before = rest.size();
  auto position = [&] {
    return stream_position(in) + static_cast<std::int64_t>(before - rest.size());
  };
  // All the output the input gives, chunk by chunk: the decompressor may produce output without
  // consuming input, which the decode loop forbids across calls. The limits bound the total.
  try {
    for (;;) {
      ByteBuf chunk = stream_.next(ctx.alloc(), rest);
      if (!chunk.is_readable()) break;
      out.emplace_back(std::move(chunk));
    }
  } catch (const DecompressionLimitError& e) {
    failed_ = true;
    const auto at = position();
    in.skip_bytes(in.readable_bytes());
    throw DecompressionLimitError(e.what(), at);
  } catch (const DecoderError& e) {
    failed_ = true;
    const auto at = position();
    in.skip_bytes(in.readable_bytes());
    throw DecoderError(e.what(), at);
  }
  in.skip_bytes(before - rest.size());
}

void CompressionDecoder::decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
  if (in.is_readable()) decode(ctx, in, out);
  if (!failed_ && (stream_.is_started() || in.is_readable()) && !stream_.is_finished()) {
    throw DecoderError("the compressed stream is truncated", stream_position(in));
  }
}

}  // namespace trellis::codec
