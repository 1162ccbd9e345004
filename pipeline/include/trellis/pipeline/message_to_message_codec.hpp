// MessageToMessageCodec<In, Out>: one duplex handler that decodes inbound In messages and encodes
// outbound Out messages, each into zero or more messages.
#pragma once

#include <tuple>
#include <utility>
#include <vector>

#include <trellis/pipeline/combined_channel_duplex_handler.hpp>
#include <trellis/pipeline/message_to_message_decoder.hpp>
#include <trellis/pipeline/message_to_message_encoder.hpp>

namespace trellis {

template <class In, class Out>
class MessageToMessageCodec;

namespace detail {

// The decoder half of MessageToMessageCodec: its decode calls the codec's.
template <class In, class Out>
class MessageToMessageCodecDecoder final : public MessageToMessageDecoder<In> {
 public:
  explicit MessageToMessageCodecDecoder(MessageToMessageCodec<In, Out>& codec) : codec_(codec) {}

 protected:
  void decode(ChannelHandlerContext& ctx, In msg, std::vector<Message>& out) override {
    codec_.decode(ctx, std::move(msg), out);
  }
  bool accept_inbound_message(const Message& msg) const override {
    return codec_.accept_inbound_message(msg);
  }

 private:
  MessageToMessageCodec<In, Out>& codec_;
};

// The encoder half of MessageToMessageCodec: its encode calls the codec's.
template <class In, class Out>
class MessageToMessageCodecEncoder final : public MessageToMessageEncoder<Out> {
 public:
  explicit MessageToMessageCodecEncoder(MessageToMessageCodec<In, Out>& codec) : codec_(codec) {}

 protected:
  void encode(ChannelHandlerContext& ctx, Out msg, std::vector<Message>& out) override {
    codec_.encode(ctx, std::move(msg), out);
  }
  bool accept_outbound_message(const Message& msg) const override {
    return codec_.accept_outbound_message(msg);
  }

 private:
  MessageToMessageCodec<In, Out>& codec_;
};

}  // namespace detail

/// One duplex handler that decodes inbound In messages and encodes outbound Out messages, each
/// into zero or more messages.
/// decode/encode follow MessageToMessageDecoder/Encoder (pooled output lists, the write's promise
/// on the last encoded message). Messages of other types pass through in both directions. A
/// CombinedChannelDuplexHandler of the two: either half can be removed on its own.
template <class In, class Out>
class MessageToMessageCodec
    : public CombinedChannelDuplexHandler<detail::MessageToMessageCodecDecoder<In, Out>,
                                          detail::MessageToMessageCodecEncoder<In, Out>> {
 public:
  /// A codec whose halves call decode() and encode().
  MessageToMessageCodec()
      : MessageToMessageCodec::CombinedChannelDuplexHandler(
            std::piecewise_construct, std::forward_as_tuple(*this), std::forward_as_tuple(*this)) {}

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
  friend class detail::MessageToMessageCodecDecoder<In, Out>;
  friend class detail::MessageToMessageCodecEncoder<In, Out>;
};

}  // namespace trellis
