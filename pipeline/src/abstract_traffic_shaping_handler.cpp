// Per-channel traffic shaping (see abstract_traffic_shaping_handler.hpp).
#include <trellis/pipeline/abstract_traffic_shaping_handler.hpp>

#include <chrono>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_config.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/channel_outbound_buffer.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/event_executor.hpp>

#include "traffic_shaping_state.hpp"

namespace trellis {

std::shared_ptr<AbstractTrafficShapingHandler::ChannelState>
AbstractTrafficShapingHandler::create_state() {
  return std::make_shared<ChannelState>();
}

AbstractTrafficShapingHandler::AbstractTrafficShapingHandler(std::size_t max_queued_bytes)
    : max_queued_bytes_(max_queued_bytes) {
  if (max_queued_bytes == 0) {
    throw InvalidArgumentError("traffic shaping: max_queued_bytes must be positive");
  }
}

AbstractTrafficShapingHandler::~AbstractTrafficShapingHandler() = default;

void AbstractTrafficShapingHandler::handler_removed(ChannelHandlerContext& ctx) {
  ChannelState& st = state_for(ctx);
  release_all(ctx, st);
  st.active = false;
}

void AbstractTrafficShapingHandler::channel_inactive(ChannelHandlerContext& ctx) {
  ChannelState& st = state_for(ctx);
  st.active = false;
  st.cancel_timers();
  while (!st.queue.empty()) {
    auto w = st.queue.take_front();
    w.promise.try_set_exception(ClosedChannelError());
  }
  st.queued_bytes = 0;
  ctx.fire_channel_inactive();
}

void AbstractTrafficShapingHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  ChannelState& st = state_for(ctx);
  const std::size_t size = ChannelOutboundBuffer::message_size(msg);
  const std::int64_t now = ctx.executor().current_time_nanos();
  const std::int64_t wait = shaper_for(ctx).read_wait(size, now);
  if (wait > 0 && st.active) {
    // Stop before passing the message on, so a read() it triggers is held back too.
    if (!st.read_suspended) {
      st.read_suspended = true;
      if (ctx.channel().config().auto_read()) {
        st.cleared_auto_read = true;
        ctx.channel().config().set_auto_read(false);
      }
    }
    // A batch read by hand goes on after the pause began: the pause lasts until all is paid.
    if (!st.read_timer.valid() || now + wait > st.read_resume_at) {
      if (st.read_timer.valid()) st.read_timer.cancel();
      st.read_resume_at = now + wait;
      st.read_timer = ctx.executor().schedule(std::chrono::nanoseconds(wait), [this, &ctx, &st] {
        st.read_timer = {};
        if (st.active) resume_reading(ctx, st);
      });
    }
  }
  ctx.fire_channel_read(std::move(msg));
}

void AbstractTrafficShapingHandler::read(ChannelHandlerContext& ctx) {
  ChannelState& st = state_for(ctx);
  if (st.read_suspended) {
    st.read_requested = true;
    return;
  }
  ctx.read();
}

void AbstractTrafficShapingHandler::resume_reading(ChannelHandlerContext& ctx, ChannelState& st) {
  if (!st.read_suspended) return;
  st.read_suspended = false;
  const bool requested = std::exchange(st.read_requested, false);
  if (std::exchange(st.cleared_auto_read, false)) {
    ctx.channel().config().set_auto_read(true);  // requests a read
  } else if (requested) {
    ctx.read();
  }
}

void AbstractTrafficShapingHandler::write(ChannelHandlerContext& ctx, Message msg,
                                          ChannelPromise promise) {
  ChannelState& st = state_for(ctx);
  const std::size_t size = ChannelOutboundBuffer::message_size(msg);
  const std::int64_t now = ctx.executor().current_time_nanos();
  const std::int64_t wait = shaper_for(ctx).write_wait(size, now);
  if (st.queue.empty() && (wait == 0 || !st.active)) {
    ctx.write(std::move(msg), std::move(promise));
    return;
  }
  // Behind a queued write a message waits its turn even when it could go at once.
  std::int64_t release_at = now + wait;
  if (!st.queue.empty() && st.queue.back().release_at > release_at) {
    release_at = st.queue.back().release_at;
  }
  st.queue.push_back(
      ChannelState::PendingWrite{std::move(msg), std::move(promise), size, release_at});
  st.queued_bytes += size;
  if (st.queued_bytes > max_queued_bytes_) set_unwritable(ctx, st, true);
  arm_write_timer(ctx, st);
}

void AbstractTrafficShapingHandler::arm_write_timer(ChannelHandlerContext& ctx, ChannelState& st) {
  if (st.queue.empty() || !st.active) return;
  const std::int64_t at = st.queue.front().release_at;
  if (st.write_timer.valid() && st.write_timer_at <= at) return;
  if (st.write_timer.valid()) st.write_timer.cancel();
  st.write_timer_at = at;
  const std::int64_t delay = at - ctx.executor().current_time_nanos();
  st.write_timer =
      ctx.executor().schedule(std::chrono::nanoseconds(delay > 0 ? delay : 0), [this, &ctx, &st] {
        st.write_timer = {};
        if (st.active) release_due(ctx, st);
      });
}

void AbstractTrafficShapingHandler::release_due(ChannelHandlerContext& ctx, ChannelState& st) {
  const std::int64_t now = ctx.executor().current_time_nanos();
  bool released = false;
  while (!st.queue.empty() && st.queue.front().release_at <= now) {
    auto w = st.queue.take_front();
    st.queued_bytes -= w.size;
    ctx.write(std::move(w.msg), std::move(w.promise));
    released = true;
  }
  if (released) ctx.flush();
  if (st.unwritable && st.queued_bytes <= max_queued_bytes_ / 2) set_unwritable(ctx, st, false);
  arm_write_timer(ctx, st);
}

void AbstractTrafficShapingHandler::release_all(ChannelHandlerContext& ctx, ChannelState& st) {
  st.cancel_timers();
  const bool open = ctx.channel().is_active();
  bool released = false;
  while (!st.queue.empty()) {
    auto w = st.queue.take_front();
    if (open) {
      ctx.write(std::move(w.msg), std::move(w.promise));
      released = true;
    } else {
      w.promise.try_set_exception(ClosedChannelError());
    }
  }
  st.queued_bytes = 0;
  if (released) ctx.flush();
  if (st.unwritable) set_unwritable(ctx, st, false);
  if (open) resume_reading(ctx, st);
}

void AbstractTrafficShapingHandler::set_unwritable(ChannelHandlerContext& ctx, ChannelState& st,
                                                   bool unwritable) {
  if (st.unwritable == unwritable) return;
  st.unwritable = unwritable;
  if (auto* out = ctx.channel().unsafe().outbound_buffer()) {
    out->set_user_defined_writability(!unwritable);
  }
}

}  // namespace trellis
