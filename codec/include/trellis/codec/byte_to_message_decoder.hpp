// ByteToMessageDecoder: the base of every stream decoder. It gathers inbound ByteBufs into one
// cumulation and calls decode() in a loop while it makes progress (Netty's semantics).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/message.hpp>

namespace trellis::codec {

/// How a new inbound buffer joins the bytes still waiting to be decoded. Both return the new
/// cumulation; `cumulation` may be empty (nothing pending), in which case `in` is adopted as is
/// (no copy). Stateless function pointers: choosing one costs nothing per read.
///
/// - merge_cumulator (the default): appends `in` into the cumulation in place when this decoder
///   owns the cumulation's storage alone and it may grow; otherwise copies both into a new buffer
///   with room to spare. Amortised O(1) per byte: the right choice for frames arriving in pieces.
/// - composite_cumulator: never writes into the pending buffer or grows it; the pieces are
///   gathered in a CompositeByteBuf and consolidated into one exactly sized buffer. Use it when
///   the inbound buffers are shared elsewhere (or read-only by contract) and should not be
///   over-allocated. decode() always sees contiguous bytes, whichever is chosen.
using Cumulator = ByteBuf (*)(ByteBufAllocator& alloc, ByteBuf&& cumulation, ByteBuf&& in);
/// The default Cumulator: appends in place when it can, else copies into a larger buffer.
ByteBuf merge_cumulator(ByteBufAllocator& alloc, ByteBuf&& cumulation, ByteBuf&& in);
/// The Cumulator that never writes into or grows the pending buffer.
ByteBuf composite_cumulator(ByteBufAllocator& alloc, ByteBuf&& cumulation, ByteBuf&& in);

/// The base of every stream decoder: gathers inbound ByteBufs into one cumulation and calls
/// decode() in a loop while it makes progress (Netty's semantics). On the channel's loop.
///
/// Subclasses implement decode(): read what they can from `in` (advancing its reader index) and
/// append complete messages to `out`. The loop rules:
/// - decode() is called again while `in` is readable and the last call consumed bytes;
/// - a call that consumes nothing and produces nothing stops the loop (waiting for more bytes);
/// - a call that produces messages without consuming anything throws DecoderError (it would
///   loop forever otherwise);
/// - in single_decode mode the loop stops after the first message.
/// Messages in `out` are fired (channel_read) before the next decode() call and at the end of the
/// read, so a decoder that removes itself mid-stream hands the rest of the bytes on in order.
/// An exception thrown by decode() reaches exception_caught of the next handlers as a DecoderError
/// (other exceptions are wrapped, nested, as with std::throw_with_nested); messages decoded before
/// it are still fired.
///
/// Zero copy: produce frames with in.read_slice(n); they share the cumulation's storage.
/// Steady state allocates nothing: `out` comes from a per-thread pool and a read that decodes to
/// completion drops the cumulation without copying anything.
///
/// Not sharable (the cumulation is per channel). Non-ByteBuf messages pass through untouched.
class ByteToMessageDecoder : public ChannelInboundHandler {
 public:
  /// The output list decode() appends to (pooled per thread; do not keep a reference to it).
  using Out = std::vector<Message>;

  /// Netty's default: after this many reads that left bytes pending, the read part of the
  /// cumulation is discarded to bound its growth.
  static constexpr int kDefaultDiscardAfterReads = 16;

  ByteToMessageDecoder() = default;

  /// The cumulator used for the following reads (merge_cumulator by default).
  void set_cumulator(Cumulator cumulator) noexcept { cumulator_ = cumulator; }
  /// In single_decode mode at most one message is decoded per channel_read (useful to hand the
  /// rest of the stream to another handler after an upgrade).
  void set_single_decode(bool single) noexcept { single_decode_ = single; }
  /// True in single_decode mode.
  bool is_single_decode() const noexcept { return single_decode_; }
  /// After how many reads with bytes left pending the read bytes are discarded (> 0).
  void set_discard_after_reads(int n);

  /// The bytes received but not decoded yet.
  std::size_t actual_readable_bytes() const noexcept { return cumulation_.readable_bytes(); }

  /// Adds a ByteBuf to the cumulation and runs the decode loop (other messages pass on).
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  /// Passes the event on; asks for more input when nothing was decoded and auto_read is off.
  void channel_read_complete(ChannelHandlerContext& ctx) override;
  /// Decodes what is left (decode, then decode_last), fires it, then channel_inactive.
  void channel_inactive(ChannelHandlerContext& ctx) override;
  /// On ChannelInputShutdownEvent runs decode_last like channel_inactive (the channel stays open).
  void user_event_triggered(ChannelHandlerContext& ctx, Message event) override;
  /// Fires the bytes not decoded yet (and channel_read_complete) to the next handler, then calls
  /// handler_removed0. When removed from inside decode(), this waits until decode() returned.
  void handler_removed(ChannelHandlerContext& ctx) final;

 protected:
  /// channel_read on a message in place (a combined codec's path, without moving it again).
  void read_message(ChannelHandlerContext& ctx, Message& msg);
  /// Decodes from `in` into `out`; see the loop rules above.
  virtual void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) = 0;
  /// Called once when the input ends (channel inactive or input shut down), after the decode loop
  /// ran on what was left; `in` may be empty. Default: decode() once if bytes are left, so a
  /// decoder that needs no end-of-stream treatment need not override it.
  virtual void decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out);
  /// Hook for subclasses after the leftover bytes were handed on in handler_removed.
  virtual void handler_removed0(ChannelHandlerContext& ctx);

  /// Stream offset of `in`'s reader index (bytes decoded on this channel before it), for the
  /// position of a DecoderError. Valid for the `in` passed to decode/decode_last.
  std::int64_t stream_position(const ByteBuf& in) const noexcept {
    return base_offset_ + static_cast<std::int64_t>(in.reader_index());
  }

  /// The decode loop over `in`, firing `out` as it goes. Public to subclasses for codecs that
  /// drive decoding themselves.
  void call_decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out);
  /// Runs the decode loop again over the bytes still pending (for a decoder that stopped of its
  /// own accord, e.g. while the channel was unwritable), fires what comes out, and then
  /// channel_read_complete if anything did.
  void decode_pending(ChannelHandlerContext& ctx);
  /// While held, channel_read_complete does not ask for more input when auto_read is off (a
  /// decoder that stopped reading on purpose does not want the bytes that a read() would bring).
  void set_input_held(bool held) noexcept { input_held_ = held; }
  /// True while input is held (see set_input_held).
  bool is_input_held() const noexcept { return input_held_; }
  /// From now on, for good, messages decoded and not fired yet are given to dropped() instead of
  /// the next handler (a protocol that must not pass on what follows a message, e.g. the
  /// requests after one the server refused).
  void drop_undelivered() noexcept { drop_undelivered_ = true; }
  /// A decoded message that drop_undelivered() kept from the next handler. Default: nothing.
  virtual void dropped(ChannelHandlerContext& ctx, Message& msg);

 private:
  enum class State : std::uint8_t { kInit, kCallingDecode, kRemovedPending };

  // decode() (decode_last() when `last`), deferring a handler_removed that happens meanwhile.
  void decode_removal_reentry_protection(ChannelHandlerContext& ctx, ByteBuf& in, Out& out,
                                         bool last);
  void fire_out(ChannelHandlerContext& ctx, Out& out);
  void after_read(ChannelHandlerContext& ctx, Out& out);
  void input_closed(ChannelHandlerContext& ctx, bool channel_inactive);
  void discard_some_read_bytes() noexcept;
  void drop_cumulation() noexcept;

  ByteBuf cumulation_;
  Cumulator cumulator_ = &merge_cumulator;
  std::int64_t base_offset_ = 0;  // stream offset of cumulation_'s index 0
  int discard_after_reads_ = kDefaultDiscardAfterReads;
  int num_reads_ = 0;
  State state_ = State::kInit;
  bool single_decode_ = false;
  bool fired_channel_read_ = false;
  bool drop_undelivered_ = false;
  bool input_held_ = false;
  // handler_removed ran (removed from the pipeline, or let go as the half of a combined handler,
  // whose shared context stays); cleared when an event reaches it again.
  bool removed_ = false;
};

}  // namespace trellis::codec
