// CompressionEncoder: compress written ByteBufs; flush ends a block, close writes the trailer.
#include <trellis/codec/compression/compression_encoder.hpp>

#include <utility>

namespace trellis::codec {

CompressionEncoder::CompressionEncoder(std::unique_ptr<StreamCompressor> compressor)
    : compressor_(std::move(compressor)) {}

ByteBuf CompressionEncoder::allocate_buffer(ChannelHandlerContext& ctx, const ByteBuf& msg) {
  // Text compresses to a fraction of itself; the buffer grows when it does not.
  return ctx.alloc().buffer(msg.readable_bytes() / 2 + 64);
}

void CompressionEncoder::encode(ChannelHandlerContext&, ByteBuf msg, ByteBuf& out) {
  if (compressor_->is_finished()) throw EncoderError("write after the compressed stream finished");
  if (!msg.is_readable()) return;
  compressor_->compress(msg.readable_span(), StreamCompressor::Op::kProcess, out);
  dirty_ = true;
}

void CompressionEncoder::flush(ChannelHandlerContext& ctx) {
  if (dirty_ && !compressor_->is_finished()) {
    dirty_ = false;
    ByteBuf out = ctx.alloc().buffer(256);
    compressor_->compress({}, StreamCompressor::Op::kFlush, out);
    ctx.write(std::move(out));
  }
  ctx.flush();
}

void CompressionEncoder::handler_removed(ChannelHandlerContext& ctx) {
  if (ctx_ == &ctx) ctx_ = nullptr;
  MessageToByteEncoder<ByteBuf>::handler_removed(ctx);
}

void CompressionEncoder::finish() {
  if (ctx_ == nullptr) throw EncoderError("CompressionEncoder::finish: not in a pipeline");
  finish(*ctx_);
}

void CompressionEncoder::finish(ChannelHandlerContext& ctx) {
  if (compressor_->is_finished()) return;
  dirty_ = false;
  ByteBuf out = ctx.alloc().buffer(256);
  compressor_->compress({}, StreamCompressor::Op::kFinish, out);
  ctx.write(std::move(out));
  ctx.flush();
}

void CompressionEncoder::close(ChannelHandlerContext& ctx, ChannelPromise promise) {
  try {
    finish(ctx);
  } catch (...) {
    ctx.fire_exception_caught(std::current_exception());
  }
  ctx.close(std::move(promise));
}

}  // namespace trellis::codec
