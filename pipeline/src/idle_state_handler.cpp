// Idle detection with one lazily re-armed timer per kind (see idle_state_handler.hpp).
#include <trellis/pipeline/idle_state_handler.hpp>

#include <algorithm>
#include <memory>

#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/pipeline/detail/watched_write.hpp>
#include <trellis/pipeline/event_executor.hpp>

namespace trellis {

namespace {

// Netty's floor: a shorter period would make the timer spin.
constexpr std::int64_t kMinIdleNanos = 1'000'000;

std::int64_t effective(std::chrono::nanoseconds d) noexcept {
  if (d.count() <= 0) return 0;
  return std::max(d.count(), kMinIdleNanos);
}

}  // namespace

IdleStateHandler::IdleStateHandler(bool observe_output, std::chrono::nanoseconds reader_idle,
                                   std::chrono::nanoseconds writer_idle,
                                   std::chrono::nanoseconds all_idle)
    : observe_output_(observe_output),
      reader_idle_(effective(reader_idle)),
      writer_idle_(effective(writer_idle)),
      all_idle_(effective(all_idle)) {}

IdleStateHandler::~IdleStateHandler() { stop(); }

void IdleStateHandler::handler_added(ChannelHandlerContext& ctx) {
  if (ctx.channel().is_active() && ctx.channel().is_registered()) start(ctx);
}

void IdleStateHandler::handler_removed(ChannelHandlerContext&) { stop(); }

void IdleStateHandler::channel_registered(ChannelHandlerContext& ctx) {
  if (ctx.channel().is_active()) start(ctx);
  ctx.fire_channel_registered();
}

void IdleStateHandler::channel_active(ChannelHandlerContext& ctx) {
  start(ctx);
  ctx.fire_channel_active();
}

void IdleStateHandler::channel_inactive(ChannelHandlerContext& ctx) {
  stop();
  ctx.fire_channel_inactive();
}

void IdleStateHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (reader_idle_ > 0 || all_idle_ > 0) {
    reading_ = true;
    first_reader_idle_ = first_all_idle_ = true;
  }
  ctx.fire_channel_read(std::move(msg));
}

void IdleStateHandler::channel_read_complete(ChannelHandlerContext& ctx) {
  if ((reader_idle_ > 0 || all_idle_ > 0) && reading_) {
    last_read_time_ = ctx.executor().current_time_nanos();
    reading_ = false;
  }
  ctx.fire_channel_read_complete();
}

void IdleStateHandler::write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  if (writer_idle_ <= 0 && all_idle_ <= 0) {
    ctx.write(std::move(msg), std::move(promise));
    return;
  }
  // The listener may run after this handler left the pipeline (or was destroyed).
  std::weak_ptr<IdleStateHandler> self(std::shared_ptr<IdleStateHandler>(ctx.handler_ptr(), this));
  EventExecutor* executor = &ctx.executor();
  auto watched =
      detail::watch_write(ctx, std::move(promise), [self, executor](const Future<void>&) {
        auto h = self.lock();
        if (!h || h->phase_ != Phase::kRunning) return;
        h->last_write_time_ = executor->current_time_nanos();
        h->first_writer_idle_ = h->first_all_idle_ = true;
      });
  ctx.write(std::move(msg), std::move(watched));
}

void IdleStateHandler::channel_idle(ChannelHandlerContext& ctx, IdleStateEvent event) {
  ctx.fire_user_event_triggered(Message(event));
}

void IdleStateHandler::start(ChannelHandlerContext& ctx) {
  // Once only: channel_registered and channel_active may both call it; a stopped handler stays
  // stopped.
  if (phase_ != Phase::kNew) return;
  phase_ = Phase::kRunning;
  snapshot_output(ctx);
  last_read_time_ = last_write_time_ = ctx.executor().current_time_nanos();
  if (reader_idle_ > 0) reader_timer_ = arm(ctx, IdleState::reader_idle, reader_idle_);
  if (writer_idle_ > 0) writer_timer_ = arm(ctx, IdleState::writer_idle, writer_idle_);
  if (all_idle_ > 0) all_timer_ = arm(ctx, IdleState::all_idle, all_idle_);
}

void IdleStateHandler::stop() noexcept {
  phase_ = Phase::kStopped;
  for (auto* t : {&reader_timer_, &writer_timer_, &all_timer_}) {
    if (t->valid()) {
      t->cancel();
      *t = {};
    }
  }
}

ScheduledFuture<void> IdleStateHandler::arm(ChannelHandlerContext& ctx, IdleState kind,
                                            std::int64_t delay) {
  // Cancelled in stop() (handler_removed at the latest), before the handler or its context go.
  return ctx.executor().schedule(std::chrono::nanoseconds(delay),
                                 [this, &ctx, kind] { on_timer(ctx, kind); });
}

std::int64_t IdleStateHandler::period_of(IdleState kind) const noexcept {
  switch (kind) {
    case IdleState::reader_idle:
      return reader_idle_;
    case IdleState::writer_idle:
      return writer_idle_;
    case IdleState::all_idle:
      break;
  }
  return all_idle_;
}

ScheduledFuture<void>& IdleStateHandler::timer_of(IdleState kind) noexcept {
  switch (kind) {
    case IdleState::reader_idle:
      return reader_timer_;
    case IdleState::writer_idle:
      return writer_timer_;
    case IdleState::all_idle:
      break;
  }
  return all_timer_;
}

void IdleStateHandler::on_timer(ChannelHandlerContext& ctx, IdleState kind) {
  ScheduledFuture<void>& timer = timer_of(kind);
  timer = {};
  if (phase_ != Phase::kRunning || !ctx.channel().is_open()) return;
  try {
    const std::int64_t period = period_of(kind);
    const std::int64_t now = ctx.executor().current_time_nanos();
    // A read batch in progress is activity: the whole period is left.
    std::int64_t last = 0;
    bool busy = false;
    switch (kind) {
      case IdleState::reader_idle:
        last = last_read_time_;
        busy = reading_;
        break;
      case IdleState::writer_idle:
        last = last_write_time_;
        break;
      case IdleState::all_idle:
        last = std::max(last_read_time_, last_write_time_);
        busy = reading_;
        break;
    }
    const std::int64_t left = busy ? period : period - (now - last);
    if (left > 0) {
      timer = arm(ctx, kind, left);  // activity since it was armed: wait for the rest
      return;
    }
    // Idle: re-arm for the next period first (a handler of the event may close the channel,
    // which cancels it).
    timer = arm(ctx, kind, period);
    bool first = false;
    switch (kind) {
      case IdleState::reader_idle:
        first = first_reader_idle_;
        first_reader_idle_ = false;
        break;
      case IdleState::writer_idle:
        first = first_writer_idle_;
        first_writer_idle_ = false;
        if (output_changed(ctx, first)) return;
        break;
      case IdleState::all_idle:
        first = first_all_idle_;
        first_all_idle_ = false;
        if (output_changed(ctx, first)) return;
        break;
    }
    channel_idle(ctx, IdleStateEvent{kind, first});
  } catch (...) {
    ctx.fire_exception_caught(std::current_exception());
  }
}

namespace {

// How far the write at the head of the outbound buffer got (Netty's currentProgress): its
// readable bytes go down as a partial write advances it.
std::size_t progress_of(const Message* msg) noexcept {
  if (msg == nullptr) return 0;
  if (const auto* buf = msg->try_get<ByteBuf>()) return buf->readable_bytes();
  if (const auto* composite = msg->try_get<CompositeByteBuf>()) return composite->readable_bytes();
  return 0;
}

}  // namespace

void IdleStateHandler::snapshot_output(ChannelHandlerContext& ctx) noexcept {
  if (!observe_output_) return;
  if (ChannelOutboundBuffer* out = ctx.channel().unsafe().outbound_buffer()) {
    const Message* current = out->current();
    last_message_ = current;
    last_pending_bytes_ = out->total_pending_write_bytes();
    last_progress_ = progress_of(current);
  }
}

bool IdleStateHandler::output_changed(ChannelHandlerContext& ctx, bool first) noexcept {
  if (!observe_output_) return false;
  // A write completed since the last check: activity, unless this is the first event of the
  // period (which the completion would have reset already).
  if (last_change_check_time_ != last_write_time_) {
    last_change_check_time_ = last_write_time_;
    if (!first) return true;
  }
  if (ChannelOutboundBuffer* out = ctx.channel().unsafe().outbound_buffer()) {
    const Message* current = out->current();
    const std::size_t pending = out->total_pending_write_bytes();
    const std::size_t progress = progress_of(current);
    if (current != last_message_ || pending != last_pending_bytes_ || progress != last_progress_) {
      last_message_ = current;
      last_pending_bytes_ = pending;
      last_progress_ = progress;
      if (!first) return true;
    }
  }
  return false;
}

}  // namespace trellis
