// MessageToByteEncoder<T>: an outbound handler that encodes each written T into one ByteBuf;
// other messages pass through untouched.
#pragma once

#include <cstddef>
#include <exception>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

namespace trellis::codec {

/// Encodes each written T into one ByteBuf; other messages pass on untouched. Runs on the
/// channel's loop, like every handler callback.
///
/// encode() appends to `out`, a buffer from allocate_buffer(). The buffer is written with the
/// write's promise, also when encode() wrote nothing (Netty writes an empty buffer too, so the
/// promise completes in order with the other writes). Exceptions from encode() fail the promise as
/// EncoderError (others are wrapped, nested).
template <class T>
class MessageToByteEncoder : public ChannelOutboundHandler {
 public:
  /// The initial capacity of the default allocate_buffer (it grows as needed).
  static constexpr std::size_t kDefaultInitialCapacity = 256;

  /// Encodes an accepted message and writes the buffer on with the write's promise.
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override {
    if (!accept_outbound_message(msg)) {
      ctx.write(std::move(msg), std::move(promise));
      return;
    }
    ByteBuf out;
    try {
      T value = msg.take<T>();
      out = allocate_buffer(ctx, value);
      encode(ctx, std::move(value), out);
    } catch (const EncoderError&) {
      throw;
    } catch (const std::exception& e) {
      std::throw_with_nested(EncoderError(e.what()));
    }
    ctx.write(std::move(out), std::move(promise));
  }

 protected:
  /// Appends the encoding of msg to `out`.
  virtual void encode(ChannelHandlerContext& ctx, T msg, ByteBuf& out) = 0;
  /// Whether a written message is encoded (default: it holds a T).
  virtual bool accept_outbound_message(const Message& msg) const { return msg.is<T>(); }
  /// The buffer encode() writes into; override to size it from the message.
  virtual ByteBuf allocate_buffer(ChannelHandlerContext& ctx, const T& /*msg*/) {
    return ctx.alloc().buffer(kDefaultInitialCapacity);
  }
};

}  // namespace trellis::codec
