// The embedded, virtual-time event loop (see embedded_event_loop.hpp).
#include <trellis/testing/embedded_event_loop.hpp>

#include <spdlog/spdlog.h>

namespace trellis {

EmbeddedEventLoop::EmbeddedEventLoop() : termination_(this) {}

EmbeddedEventLoop::~EmbeddedEventLoop() {
  shut_down_ = true;
  cancel_scheduled_tasks();
  tasks_.clear();
}

void EmbeddedEventLoop::execute(UniqueFunction<void()> fn) {
  if (shut_down_) throw RejectedExecutionError("embedded event loop is shut down");
  tasks_.push_back(std::move(fn));
}

std::int64_t EmbeddedEventLoop::current_time_nanos() const {
  if (pinned_) return pinned_at_;
  if (frozen_) return frozen_at_;
  return monotonic_nanos() + advanced_;
}

std::size_t EmbeddedEventLoop::run_pending_tasks() {
  detail::CurrentExecutorScope scope(this);
  std::size_t n = 0;
  while (!tasks_.empty()) {
    auto fn = std::move(tasks_.front());
    tasks_.pop_front();
    ++n;
    // Exceptions from tasks propagate to the test, which is what a test wants to see.
    fn();
  }
  return n;
}

std::int64_t EmbeddedEventLoop::run_scheduled_pending_tasks() {
  detail::CurrentExecutorScope scope(this);
  run_due_scheduled_tasks(current_time_nanos());
  return next_scheduled_deadline();
}

void EmbeddedEventLoop::freeze_time() {
  if (frozen_) return;
  frozen_at_ = current_time_nanos();
  frozen_ = true;
}

void EmbeddedEventLoop::unfreeze_time() {
  if (!frozen_) return;
  // Time flows on from the frozen value.
  advanced_ = frozen_at_ - monotonic_nanos();
  frozen_ = false;
}

void EmbeddedEventLoop::advance_by(std::chrono::nanoseconds d) {
  if (d.count() < 0) throw InvalidArgumentError("advance_by: negative duration");
  detail::CurrentExecutorScope scope(this);
  const std::int64_t start = current_time_nanos();
  const std::int64_t target = detail::deadline_after(start, d.count());
  while (auto* task = poll_scheduled_task(target)) {
    pinned_ = true;
    pinned_at_ = std::max(start, task->deadline_nanos());
    try {
      run_scheduled_task(task);
      run_pending_tasks();
    } catch (...) {
      pinned_ = false;
      throw;
    }
  }
  pinned_ = false;
  if (frozen_) {
    frozen_at_ += target - start;
  } else {
    advanced_ += target - start;
  }
}

Future<void> EmbeddedEventLoop::do_shutdown_gracefully(std::chrono::nanoseconds,
                                                       std::chrono::nanoseconds) {
  if (!shut_down_) {
    run_pending_tasks();
    shut_down_ = true;
    cancel_scheduled_tasks();
    termination_.try_set_value();
  }
  return termination_.future();
}

}  // namespace trellis
