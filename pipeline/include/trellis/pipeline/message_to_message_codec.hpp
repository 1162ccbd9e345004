// MessageToMessageCodec<In, Out>: one duplex handler that decodes inbound In messages and encodes
// outbound Out messages, each into zero or more messages.
#pragma once

#include <vector>

#include <trellis/pipeline/message_to_message_decoder.hpp>
#include <trellis/pipeline/message_to_message_encoder.hpp>

namespace trellis {

/// One duplex handler that decodes inbound In messages and encodes outbound Out messages, each
/// into zero or more messages.
/// decode/encode follow MessageToMessageDecoder/Encoder (pooled output lists, the write's promise
/// on the last encoded message). Messages of other types pass through in both directions.
template <class In, class Out>
class MessageToMessageCodec : public ChannelDuplexHandler {
 public:
  MessageToMessageCodec() : decoder_(*this), encoder_(*this) {}

  /// Decodes an accepted inbound message and fires what it became.
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    decoder_.channel_read(ctx, std::move(msg));
  }
  /// Encodes an accepted written message and writes what it became.
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override {
    encoder_.write(ctx, std::move(msg), std::move(promise));
  }

 protected:
  /// Appends what msg decodes to to `out` (possibly nothing).
  virtual void decode(ChannelHandlerContext& ctx, In msg, std::vector<Message>& out) = 0;
  /// Appends what msg encodes to to `out` (possibly nothing: the promise then succeeds).
  virtual void encode(ChannelHandlerContext& ctx, Out msg, std::vector<Message>& out) = 0;
  /// Whether an inbound message is decoded (default: it holds an In).
  virtual bool accept_inbound_message(const Message& msg) const { return msg.is<In>(); }
  /// Whether a written message is encoded (default: it holds an Out).
  virtual bool accept_outbound_message(const Message& msg) const { return msg.is<Out>(); }

 private:
  class Decoder final : public MessageToMessageDecoder<In> {
   public:
    explicit Decoder(MessageToMessageCodec& codec) : codec_(codec) {}

   protected:
    void decode(ChannelHandlerContext& ctx, In msg, std::vector<Message>& out) override {
      codec_.decode(ctx, std::move(msg), out);
    }
    bool accept_inbound_message(const Message& msg) const override {
      return codec_.accept_inbound_message(msg);
    }

   private:
    MessageToMessageCodec& codec_;
  };

  class Encoder final : public MessageToMessageEncoder<Out> {
   public:
    explicit Encoder(MessageToMessageCodec& codec) : codec_(codec) {}

   protected:
    void encode(ChannelHandlerContext& ctx, Out msg, std::vector<Message>& out) override {
      codec_.encode(ctx, std::move(msg), out);
    }
    bool accept_outbound_message(const Message& msg) const override {
      return codec_.accept_outbound_message(msg);
    }

   private:
    MessageToMessageCodec& codec_;
  };

  Decoder decoder_;
  Encoder encoder_;
};

}  // namespace trellis
