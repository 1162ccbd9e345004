// ReplayingDecoder: a ByteToMessageDecoder whose decode is written as if every byte were already
// there; a read past the bytes received so far abandons the attempt, which is replayed from the
// last checkpoint when more bytes arrive (Netty's ReplayingDecoder).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <variant>

#include <trellis/codec/byte_to_message_decoder.hpp>
#include <trellis/codec/replaying_byte_buf.hpp>

namespace trellis::codec {

/// The state-free part of ReplayingDecoder<State> (use that class).
///
/// Each decode attempt starts with a checkpoint at the reader index. decode_replaying reads from
/// a ReplayingByteBuf; when a read needs bytes that have not arrived, the attempt is abandoned:
/// the reader index goes back to the last checkpoint and the messages added to `out` since that
/// checkpoint are dropped. The next attempt comes when more bytes arrive (not before: an attempt
/// on the very bytes that were just too few is skipped). checkpoint() during decode_replaying
/// keeps what was read so far, so a long message is not parsed again from its start on every
/// arrival: read the header, checkpoint(kBody), read the body.
///
/// The cost over a ByteToMessageDecoder is a bounds check per read, and one C++ throw per
/// abandoned attempt (about a microsecond: an attempt per arrival that leaves a message
/// incomplete). Where messages usually arrive whole, as in request/response traffic, it is close
/// to a hand-written decoder; for a stream trickling in byte by byte, checkpoint often.
///
/// At the end of the input (channel inactive, input shut down) decode_last_replaying gets what
/// is left, as decode_last does. Not sharable.
class ReplayingDecoderBase : public ByteToMessageDecoder {
 protected:
  ReplayingDecoderBase() = default;

  /// Decodes from `in` into `out`, reading as if every byte were there. Called in a loop while it
  /// makes progress (consumes bytes, or changes the state with set_state/checkpoint(state)).
  virtual void decode_replaying(ChannelHandlerContext& ctx, ReplayingByteBuf& in, Out& out) = 0;
  /// At the end of the input: what is left. Default: decode_replaying once if bytes are left (an
  /// incomplete message is then dropped).
  virtual void decode_last_replaying(ChannelHandlerContext& ctx, ReplayingByteBuf& in, Out& out);

  /// Keeps what decode_replaying read so far: an abandoned attempt rewinds to here, not to where
  /// it started. Call it only from decode_replaying.
  void checkpoint() noexcept;

  /// Counts as progress in the decode loop (the typed ReplayingDecoder calls it when the state
  /// changes).
  void note_state_change() noexcept { ++state_version_; }

  /// How many attempts were abandoned so far (for tests and diagnostics).
  std::uint64_t replays() const noexcept { return replays_; }

 private:
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) final;
  void decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) final;
  // One attempt; false when it was abandoned.
  bool attempt(ChannelHandlerContext& ctx, ByteBuf& in, Out& out, bool last);

  static constexpr std::size_t kNone = ~std::size_t{0};
  ByteBuf* in_ = nullptr;  // during an attempt
  Out* out_ = nullptr;
  std::size_t checkpoint_ = 0;
  std::size_t checkpoint_out_ = 0;
  // The readable byte count an attempt was abandoned at: no attempt until it changes.
  std::size_t replayed_at_ = kNone;
  std::uint64_t state_version_ = 0;
  std::uint64_t replays_ = 0;
};

/// Netty's ReplayingDecoder: derive, implement decode_replaying as if the whole message were
/// there, and checkpoint(next_state) after each part worth keeping. `State` is the decoder's
/// own state (an enum, usually); std::monostate when it needs none.
///
/// ```
/// enum class Part { kLength, kBody };
/// class Frames : public ReplayingDecoder<Part> {
///   std::uint32_t length_ = 0;
///   void decode_replaying(ChannelHandlerContext&, ReplayingByteBuf& in, Out& out) override {
///     if (state() == Part::kLength) { length_ = in.read_u32(); checkpoint(Part::kBody); }
///     out.emplace_back(in.read_slice(length_));
///     checkpoint(Part::kLength);
///   }
/// };
/// ```
template <class StateT = std::monostate>
class ReplayingDecoder : public ReplayingDecoderBase {
 public:
  /// The decoder's state type.
  using State = StateT;

  /// A decoder starting in `initial`.
  explicit ReplayingDecoder(State initial = State{}) : state_(std::move(initial)) {}

  /// The current state.
  const State& state() const noexcept { return state_; }

 protected:
  using ReplayingDecoderBase::checkpoint;
  /// Sets the state and checkpoints: an abandoned attempt resumes in `next` from here.
  void checkpoint(State next) {
    set_state(std::move(next));
    checkpoint();
  }
  /// Sets the state without a checkpoint (an abandoned attempt keeps the new state).
  void set_state(State next) {
    state_ = std::move(next);
    note_state_change();
  }

 private:
  State state_;
};

}  // namespace trellis::codec
