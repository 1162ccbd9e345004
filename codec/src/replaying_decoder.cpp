// ReplayingDecoder's attempt loop and ReplayingByteBuf's out-of-line reads (see
// replaying_decoder.hpp).
#include <trellis/codec/replaying_decoder.hpp>

#include <cstddef>
#include <string>

namespace trellis::detail {
void throw_replay() { throw ReplaySignal{}; }
}  // namespace trellis::detail

namespace trellis::codec {

std::string ReplayingByteBuf::read_string(std::size_t length) {
  auto bytes = need(length).readable_span().first(length);
  std::string s(reinterpret_cast<const char*>(bytes.data()), length);
  buf_->skip_bytes(length);
  return s;
}

std::size_t ReplayingByteBuf::bytes_before(std::uint8_t value) const {
  const std::int64_t at = buf_->index_of(buf_->reader_index(), buf_->writer_index(), value);
  if (at < 0) trellis::detail::throw_replay();
  return static_cast<std::size_t>(at) - buf_->reader_index();
}

void ReplayingDecoderBase::decode_last_replaying(ChannelHandlerContext& ctx, ReplayingByteBuf& in,
                                                 Out& out) {
  if (in.actual_readable_bytes() > 0) decode_replaying(ctx, in, out);
}

void ReplayingDecoderBase::checkpoint() noexcept {
  if (in_ == nullptr) return;
  checkpoint_ = in_->reader_index();
  checkpoint_out_ = out_->size();
}

bool ReplayingDecoderBase::attempt(ChannelHandlerContext& ctx, ByteBuf& in, Out& out, bool last) {
  in_ = &in;
  out_ = &out;
  checkpoint_ = in.reader_index();
  checkpoint_out_ = out.size();
  ReplayingByteBuf replayable(in);
  try {
    if (last) {
      decode_last_replaying(ctx, replayable, out);
    } else {
      decode_replaying(ctx, replayable, out);
    }
  } catch (const trellis::detail::ReplaySignal&) {
    in.set_reader_index(checkpoint_);
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(checkpoint_out_), out.end());
    in_ = nullptr;
    out_ = nullptr;
    ++replays_;
    replayed_at_ = in.readable_bytes();
    return false;
  } catch (...) {
    in_ = nullptr;
    out_ = nullptr;
    throw;
  }
  in_ = nullptr;
  out_ = nullptr;
  replayed_at_ = kNone;
  return true;
}

void ReplayingDecoderBase::decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
  // The same bytes as the attempt that was abandoned last: it would be abandoned again.
  if (in.readable_bytes() == replayed_at_) return;
  while (true) {
    const std::size_t before = in.reader_index();
    const std::size_t out_before = out.size();
    const std::uint64_t version = state_version_;
    if (!attempt(ctx, in, out, false)) return;
    // A state change alone is progress too (the base loop counts only bytes and messages).
    if (in.reader_index() != before || out.size() != out_before || version == state_version_ ||
        !in.is_readable()) {
      return;
    }
  }
}

void ReplayingDecoderBase::decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
  attempt(ctx, in, out, true);
}

}  // namespace trellis::codec
