// ByteToMessageCodec<T>: one duplex handler that decodes bytes into messages (as a
// ByteToMessageDecoder) and encodes written T into bytes (as a MessageToByteEncoder<T>).
#pragma once

#include <tuple>
#include <utility>

#include <trellis/codec/byte_to_message_decoder.hpp>
#include <trellis/codec/message_to_byte_encoder.hpp>
#include <trellis/pipeline/combined_channel_duplex_handler.hpp>

namespace trellis::codec {
template <class T>
class ByteToMessageCodec;
}  // namespace trellis::codec

// The halves live in trellis::detail: a trellis::codec::detail namespace in a public header would
// hide trellis::detail from code in trellis::codec that names it as `detail::`.
namespace trellis::detail {

// The decoder half of ByteToMessageCodec: its decode and decode_last call the codec's.
template <class T>
class ByteToMessageCodecDecoder final : public codec::ByteToMessageDecoder {
 public:
  explicit ByteToMessageCodecDecoder(codec::ByteToMessageCodec<T>& codec) : codec_(codec) {}

 protected:
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override {
    codec_.decode(ctx, in, out);
  }
  void decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override {
    codec_.decode_last(ctx, in, out);
  }

 private:
  codec::ByteToMessageCodec<T>& codec_;
};

// The encoder half of ByteToMessageCodec: its encode calls the codec's.
template <class T>
class ByteToMessageCodecEncoder final : public codec::MessageToByteEncoder<T> {
 public:
  explicit ByteToMessageCodecEncoder(codec::ByteToMessageCodec<T>& codec) : codec_(codec) {}

 protected:
  void encode(ChannelHandlerContext& ctx, T msg, ByteBuf& out) override {
    codec_.encode(ctx, std::move(msg), out);
  }
  bool accept_outbound_message(const Message& msg) const override {
    return codec_.accept_outbound_message(msg);
  }

 private:
  codec::ByteToMessageCodec<T>& codec_;
};

}  // namespace trellis::detail

namespace trellis::codec {

/// One duplex handler that decodes bytes into messages and encodes written T into bytes.
/// Subclasses implement decode (and optionally decode_last) with ByteToMessageDecoder's loop
/// rules, and encode with MessageToByteEncoder's. A CombinedChannelDuplexHandler of a
/// ByteToMessageDecoder and a MessageToByteEncoder<T>, so the two halves behave exactly like the
/// stand-alone handlers (the decoder hands on its pending bytes when removed) and either can be
/// removed on its own.
template <class T>
class ByteToMessageCodec
    : public CombinedChannelDuplexHandler<trellis::detail::ByteToMessageCodecDecoder<T>,
                                          trellis::detail::ByteToMessageCodecEncoder<T>> {
 public:
  /// The output list decode() appends to (see ByteToMessageDecoder::Out).
  using Out = ByteToMessageDecoder::Out;

  /// A codec whose halves call decode(), decode_last() and encode().
  ByteToMessageCodec()
      : ByteToMessageCodec::CombinedChannelDuplexHandler(
            std::piecewise_construct, std::forward_as_tuple(*this), std::forward_as_tuple(*this)) {}

  /// The decoder half's settings (see ByteToMessageDecoder).
  ByteToMessageDecoder& decoder() noexcept { return this->inbound_handler(); }

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
  friend class trellis::detail::ByteToMessageCodecDecoder<T>;
  friend class trellis::detail::ByteToMessageCodecEncoder<T>;
};

}  // namespace trellis::codec
