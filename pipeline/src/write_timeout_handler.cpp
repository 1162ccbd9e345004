// Per-write timeouts (see write_timeout_handler.hpp).
#include <trellis/pipeline/write_timeout_handler.hpp>

#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/detail/watched_write.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/event_executor.hpp>

namespace trellis {

struct WriteTimeoutHandler::PendingWrite {
  ChannelPromise promise;  // the writer's (may be void)
  ScheduledFuture<void> timer;
  PendingList::iterator position;
  bool linked = false;  // in pending_: the timer may still run
  bool done = false;    // the write completed
};

WriteTimeoutHandler::~WriteTimeoutHandler() { cancel_all(); }

void WriteTimeoutHandler::write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  if (timeout_ <= 0) {
    ctx.write(std::move(msg), std::move(promise));
    return;
  }
  auto pending = std::make_shared<PendingWrite>();
  pending->promise = promise;
  PendingWrite* raw = pending.get();
  // The timer is cancelled before the entry leaves pending_, so `raw` is alive when it runs.
  pending->timer = ctx.executor().schedule(std::chrono::nanoseconds(timeout_),
                                           [this, &ctx, raw] { on_timeout(ctx, raw); });
  pending->position = pending_.insert(pending_.end(), pending);
  pending->linked = true;
  // Completion runs on the channel's loop; after handler_removed (or the handler's destruction)
  // the entry is unlinked and the listener leaves the handler alone.
  auto watched = detail::watch_write(ctx, std::move(promise), [this, pending](const Future<void>&) {
    pending->done = true;
    if (!pending->linked) return;
    pending->timer.cancel();
    unlink(*pending);
  });
  ctx.write(std::move(msg), std::move(watched));
}

void WriteTimeoutHandler::handler_removed(ChannelHandlerContext&) { cancel_all(); }

void WriteTimeoutHandler::on_timeout(ChannelHandlerContext& ctx, PendingWrite* write) {
  if (!write->linked) return;
  std::shared_ptr<PendingWrite> keep = *write->position;
  unlink(*write);
  if (write->done) return;
  try {
    if (write->promise.is_void()) {
      ctx.fire_exception_caught(std::make_exception_ptr(WriteTimeoutError()));
    } else {
      write->promise.try_set_exception(WriteTimeoutError());
    }
    write_timed_out(ctx);
  } catch (...) {
    ctx.fire_exception_caught(std::current_exception());
  }
}

void WriteTimeoutHandler::write_timed_out(ChannelHandlerContext& ctx) {
  if (closed_) return;
  closed_ = true;
  ctx.close();
}

void WriteTimeoutHandler::unlink(PendingWrite& write) noexcept {
  if (!write.linked) return;
  write.linked = false;
  pending_.erase(write.position);  // may drop the last reference but one (the caller's)
}

void WriteTimeoutHandler::cancel_all() noexcept {
  PendingList pending = std::move(pending_);
  pending_.clear();
  for (auto& w : pending) {
    w->linked = false;
    if (w->timer.valid()) w->timer.cancel();
  }
}

}  // namespace trellis
