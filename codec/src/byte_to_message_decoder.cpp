// ByteToMessageDecoder (see byte_to_message_decoder.hpp).
#include <trellis/codec/byte_to_message_decoder.hpp>

#include <algorithm>
#include <exception>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_events.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/pipeline/detail/message_list_pool.hpp>

namespace trellis::codec {

ByteBuf merge_cumulator(ByteBufAllocator& alloc, ByteBuf&& cumulation, ByteBuf&& in) {
  if (!cumulation.is_readable()) return std::move(in);
  if (!in.is_readable()) return std::move(cumulation);
  const std::size_t incoming = in.readable_bytes();
  // In place only when no other handle sees this storage (a frame sliced from it, or the
  // producer's share) and it may grow that far; ByteBuf::ensure_writable does the doubling.
  if (cumulation.ref_count() == 1 &&
      incoming <= cumulation.max_capacity() - cumulation.writer_index()) {
    cumulation.write_bytes(in);
    return std::move(cumulation);
  }
  const std::size_t total = cumulation.readable_bytes() + incoming;
  ByteBuf merged =
      alloc.buffer(std::min(std::max<std::size_t>(total * 2, 256), ByteBuf::kMaxCapacity));
  merged.write_bytes(cumulation);
  merged.write_bytes(in);
  return merged;
}

ByteBuf composite_cumulator(ByteBufAllocator& alloc, ByteBuf&& cumulation, ByteBuf&& in) {
  if (!cumulation.is_readable()) return std::move(in);
  if (!in.is_readable()) return std::move(cumulation);
  CompositeByteBuf pieces(alloc);
  pieces.add_component(std::move(cumulation));
  pieces.add_component(std::move(in));
  return pieces.consolidate();
}

void ByteToMessageDecoder::set_discard_after_reads(int n) {
  if (n <= 0) throw InvalidArgumentError("discard_after_reads must be > 0");
  discard_after_reads_ = n;
}

void ByteToMessageDecoder::channel_read(ChannelHandlerContext& ctx, Message msg) {
  read_message(ctx, msg);
}

void ByteToMessageDecoder::read_message(ChannelHandlerContext& ctx, Message& msg) {
  if (!msg.is<ByteBuf>()) {
    ctx.fire_channel_read(std::move(msg));
    return;
  }
  removed_ = false;  // an event reached it: it is in a pipeline (again)
  detail::PooledMessageList pooled;
  Out& out = pooled.list();
  try {
    const std::int64_t pending_at = stream_position(cumulation_);
    if (!cumulation_.is_readable() &&
        (cumulator_ == &merge_cumulator || cumulator_ == &composite_cumulator)) {
      // Nothing pending (the usual case: the last read was decoded whole): both built-in
      // cumulators would return the new buffer itself, so take it without the call.
      cumulation_ = std::move(msg.get<ByteBuf>());
    } else {
      cumulation_ = cumulator_(ctx.alloc(), std::move(cumulation_), msg.take<ByteBuf>());
    }
    base_offset_ = pending_at - static_cast<std::int64_t>(cumulation_.reader_index());
    call_decode(ctx, cumulation_, out);
  } catch (...) {
    after_read(ctx, out);
    throw;
  }
  after_read(ctx, out);
}

void ByteToMessageDecoder::after_read(ChannelHandlerContext& ctx, Out& out) {
  if (!cumulation_.is_readable()) {
    // Everything decoded: the storage goes back now rather than on the next read.
    num_reads_ = 0;
    drop_cumulation();
  } else if (++num_reads_ >= discard_after_reads_) {
    num_reads_ = 0;
    discard_some_read_bytes();
  }
  fire_out(ctx, out);
}

void ByteToMessageDecoder::decode_pending(ChannelHandlerContext& ctx) {
  if (!cumulation_.is_readable()) return;  // also after a removal, which hands the bytes on
  detail::PooledMessageList pooled;
  Out& out = pooled.list();
  const bool fired_before = fired_channel_read_;
  fired_channel_read_ = false;
  auto finish = [&] {
    after_read(ctx, out);
    if (fired_channel_read_) ctx.fire_channel_read_complete();
    fired_channel_read_ = fired_before;
  };
  try {
    call_decode(ctx, cumulation_, out);
  } catch (...) {
    finish();
    throw;
  }
  finish();
}

void ByteToMessageDecoder::channel_read_complete(ChannelHandlerContext& ctx) {
  num_reads_ = 0;
  discard_some_read_bytes();
  // Nothing came out of this read and nobody else will ask: ask for more bytes ourselves.
  if (!fired_channel_read_ && !input_held_ && !ctx.channel().config().auto_read()) ctx.read();
  fired_channel_read_ = false;
  ctx.fire_channel_read_complete();
}

void ByteToMessageDecoder::channel_inactive(ChannelHandlerContext& ctx) { input_closed(ctx, true); }

void ByteToMessageDecoder::user_event_triggered(ChannelHandlerContext& ctx, Message event) {
  if (event.is<ChannelInputShutdownEvent>()) {
    // The last bytes are decoded before the event goes on, as for channel_inactive.
    input_closed(ctx, false);
  }
  ctx.fire_user_event_triggered(std::move(event));
}

void ByteToMessageDecoder::input_closed(ChannelHandlerContext& ctx, bool channel_inactive) {
  removed_ = false;
  detail::PooledMessageList pooled;
  Out& out = pooled.list();
  auto finish = [&] {
    drop_cumulation();
    const bool produced = !out.empty();
    fire_out(ctx, out);
    if (produced) ctx.fire_channel_read_complete();
    if (channel_inactive) ctx.fire_channel_inactive();
  };
  try {
    call_decode(ctx, cumulation_, out);
    if (!removed_) {
      try {
        decode_removal_reentry_protection(ctx, cumulation_, out, /*last=*/true);
      } catch (const DecoderError&) {
        throw;
      } catch (const std::exception& e) {
        std::throw_with_nested(DecoderError(e.what(), stream_position(cumulation_)));
      } catch (...) {
        std::throw_with_nested(DecoderError("decode_last() threw a non-standard exception"));
      }
    }
  } catch (...) {
    finish();
    throw;
  }
  finish();
}

void ByteToMessageDecoder::decode_last(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
  if (in.is_readable()) decode(ctx, in, out);
}

void ByteToMessageDecoder::handler_removed0(ChannelHandlerContext&) {}

void ByteToMessageDecoder::dropped(ChannelHandlerContext&, Message&) {}

void ByteToMessageDecoder::handler_removed(ChannelHandlerContext& ctx) {
  // Not ctx.is_removed(): as the half of a combined handler, this decoder goes while the
  // context it shares stays. The pipeline calls this whenever it removes the context.
  removed_ = true;
  if (state_ == State::kCallingDecode) {
    // decode() still works on the cumulation: finish this once it returned.
    state_ = State::kRemovedPending;
    return;
  }
  ByteBuf left = std::move(cumulation_);
  base_offset_ += static_cast<std::int64_t>(left.reader_index());
  num_reads_ = 0;
  if (left.is_readable()) {
    ctx.fire_channel_read(std::move(left));
    ctx.fire_channel_read_complete();
  }
  handler_removed0(ctx);
}

void ByteToMessageDecoder::call_decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) {
  try {
    while (in.is_readable()) {
      if (!out.empty()) {
        fire_out(ctx, out);
        // A handler after us may have removed this decoder: the rest is theirs now.
        if (removed_) break;
      }
      const std::size_t before = in.readable_bytes();
      decode_removal_reentry_protection(ctx, in, out, false);
      if (removed_) break;
      if (out.empty()) {
        if (before == in.readable_bytes()) break;  // waiting for more bytes
        continue;
      }
      if (before == in.readable_bytes()) {
        throw DecoderError("decode() produced a message without reading anything",
                           stream_position(in));
      }
      if (single_decode_) break;
    }
  } catch (const DecoderError&) {
    throw;
  } catch (const std::exception& e) {
    std::throw_with_nested(DecoderError(e.what(), stream_position(in)));
  } catch (...) {
    std::throw_with_nested(DecoderError("decode() threw a non-standard exception"));
  }
}

void ByteToMessageDecoder::decode_removal_reentry_protection(ChannelHandlerContext& ctx,
                                                             ByteBuf& in, Out& out, bool last) {
  state_ = State::kCallingDecode;
  auto finish = [&] {
    const bool remove_pending = state_ == State::kRemovedPending;
    state_ = State::kInit;
    if (remove_pending) {
      fire_out(ctx, out);
      handler_removed(ctx);
    }
  };
  try {
    if (last) {
      decode_last(ctx, in, out);
    } else {
      decode(ctx, in, out);
    }
  } catch (...) {
    finish();
    throw;
  }
  finish();
}

void ByteToMessageDecoder::fire_out(ChannelHandlerContext& ctx, Out& out) {
  if (out.empty()) return;
  fired_channel_read_ = true;
  for (Message& m : out) {
    if (drop_undelivered_) [[unlikely]] {
      dropped(ctx, m);
      continue;
    }
    ctx.fire_channel_read(std::move(m));
  }
  out.clear();
}

void ByteToMessageDecoder::discard_some_read_bytes() noexcept {
  if (cumulation_.reader_index() == 0) return;
  // Only when the read part is worth moving: half the buffer, or the storage is shared (then
  // discarding moves the handle's start and copies nothing).
  if (cumulation_.ref_count() == 1 && cumulation_.reader_index() < cumulation_.capacity() / 2) {
    return;
  }
  const std::int64_t at = stream_position(cumulation_);
  cumulation_.discard_read_bytes();
  base_offset_ = at - static_cast<std::int64_t>(cumulation_.reader_index());
}

void ByteToMessageDecoder::drop_cumulation() noexcept {
  base_offset_ = stream_position(cumulation_);
  cumulation_ = ByteBuf();
}

}  // namespace trellis::codec
