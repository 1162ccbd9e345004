// ByteToMessageCodec<T>: one duplex handler that decodes bytes into messages (as a
// ByteToMessageDecoder) and encodes written T into bytes (as a MessageToByteEncoder<T>).
#pragma once

#include <trellis/codec/byte_to_message_decoder.hpp>
#include <trellis/codec/message_to_byte_encoder.hpp>

namespace trellis::codec {

/// One duplex handler that decodes bytes into messages and encodes written T into bytes.
/// Subclasses implement decode (and optionally decode_last) with ByteToMessageDecoder's loop
/// rules, and encode with MessageToByteEncoder's. Inbound and outbound state are separate objects
/// inside, so the two halves behave exactly like the stand-alone handlers.
template <class T>
class ByteToMessageCodec : public ChannelDuplexHandler {
 public:
  /// The output list decode() appends to (see ByteToMessageDecoder::Out).
  using Out = ByteToMessageDecoder::Out;

  ByteToMessageCodec() : decoder_(*this), encoder_(*this) {}

  /// The decoder half's settings (see ByteToMessageDecoder).
  ByteToMessageDecoder& decoder() noexcept { return decoder_; }

  /// @name Handler callbacks
  ///@{

  /// Inbound events go to the decoder half, writes to the encoder half.
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    decoder_.channel_read(ctx, std::move(msg));
  }
  void channel_read_complete(ChannelHandlerContext& ctx) override {
    decoder_.channel_read_complete(ctx);
  }
  void channel_inactive(ChannelHandlerContext& ctx) override { decoder_.channel_inactive(ctx); }
  void user_event_triggered(ChannelHandlerContext& ctx, Message event) override {
    decoder_.user_event_triggered(ctx, std::move(event));
  }
  void handler_removed(ChannelHandlerContext& ctx) override { decoder_.handler_removed(ctx); }
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override {
    encoder_.write(ctx, std::move(msg), std::move(promise));
  }
  ///@}

 protected:
  /// Decodes from `in` into `out` (ByteToMessageDecoder::decode's loop rules).
  virtual void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) = 0;
  /// Called once when the input ends (see ByteToMessageDecoder::decode_last); default: decode()
  /// once if bytes are left.
  virtual void decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
    if (in.is_readable()) decode(ctx, in, out);
  }
  /// Encodes msg into `out` (MessageToByteEncoder::encode's rules).
  virtual void encode(ChannelHandlerContext& ctx, T msg, ByteBuf& out) = 0;
  /// Whether a written message is encoded (default: it holds a T); others pass on untouched.
  virtual bool accept_outbound_message(const Message& msg) const { return msg.is<T>(); }

 private:
  class Decoder final : public ByteToMessageDecoder {
   public:
    explicit Decoder(ByteToMessageCodec& codec) : codec_(codec) {}

   protected:
    void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override {
      codec_.decode(ctx, in, out);
    }
    void decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override {
      codec_.decode_last(ctx, in, out);
    }

   private:
    ByteToMessageCodec& codec_;
  };

  class Encoder final : public MessageToByteEncoder<T> {
   public:
    explicit Encoder(ByteToMessageCodec& codec) : codec_(codec) {}

   protected:
    void encode(ChannelHandlerContext& ctx, T msg, ByteBuf& out) override {
      codec_.encode(ctx, std::move(msg), out);
    }
    bool accept_outbound_message(const Message& msg) const override {
      return codec_.accept_outbound_message(msg);
    }

   private:
    ByteToMessageCodec& codec_;
  };

  Decoder decoder_;
  Encoder encoder_;
};

}  // namespace trellis::codec
