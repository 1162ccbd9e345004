// CompressionEncoder: the outbound handler behind ZlibEncoder, BrotliEncoder and ZstdEncoder.
// Every written ByteBuf is compressed into the stream; flush() ends a block that the peer can
// decode completely; close() (or finish()) writes the stream's trailer.
#pragma once

#include <memory>

#include <trellis/codec/compression/stream_compressor.hpp>
#include <trellis/codec/message_to_byte_encoder.hpp>

namespace trellis::codec {

/// Compresses every written ByteBuf into one stream: the base of ZlibEncoder, BrotliEncoder and
/// ZstdEncoder. On the channel's loop.
///
/// Compressed bytes are written as ByteBufs, each with the promise of the write that produced
/// them (possibly empty: the compressor may keep small inputs until the next flush). Not sharable.
class CompressionEncoder : public MessageToByteEncoder<ByteBuf> {
 public:
  /// An encoder that writes `compressor`'s stream.
  explicit CompressionEncoder(std::unique_ptr<StreamCompressor> compressor);

  /// Remembers the context, for finish().
  void handler_added(ChannelHandlerContext& ctx) override { ctx_ = &ctx; }
  /// Forgets the context: finish() then throws EncoderError until the encoder is added again.
  void handler_removed(ChannelHandlerContext& ctx) override;
  /// Writes what the compressor holds as a complete block (Z_SYNC_FLUSH, BROTLI_OPERATION_FLUSH,
  /// ZSTD_e_flush), then flushes.
  void flush(ChannelHandlerContext& ctx) override;
  /// Finishes the stream (its trailer is written and flushed), then closes.
  void close(ChannelHandlerContext& ctx, ChannelPromise promise) override;

  /// Writes the trailer and flushes; writes after it fail with EncoderError. Call on the channel's
  /// loop, once the encoder is in a pipeline. Idempotent.
  void finish();
  /// The trailer was written (finish() or close()).
  bool is_finished() const noexcept { return compressor_->is_finished(); }

 protected:
  void encode(ChannelHandlerContext& ctx, ByteBuf msg, ByteBuf& out) override;
  ByteBuf allocate_buffer(ChannelHandlerContext& ctx, const ByteBuf& msg) override;

 private:
  void finish(ChannelHandlerContext& ctx);

  std::unique_ptr<StreamCompressor> compressor_;
  ChannelHandlerContext* ctx_ = nullptr;
  bool dirty_ = false;  // input compressed since the last flush
};

}  // namespace trellis::codec
