// The thread-safe virtual-time test loop (see async_testing_event_loop.hpp).
#include <trellis/testing/async_testing_event_loop.hpp>

#include <algorithm>

#include <spdlog/spdlog.h>

namespace trellis {

AsyncTestingEventLoop::AsyncTestingEventLoop()
    : termination_(nullptr), thread_([this] { thread_main(); }) {}

AsyncTestingEventLoop::~AsyncTestingEventLoop() { shutdown_and_join(); }

bool AsyncTestingEventLoop::is_shutting_down() const {
  std::lock_guard lock(mutex_);
  return stopping_;
}

void AsyncTestingEventLoop::execute(UniqueFunction<void()> fn) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) throw RejectedExecutionError("async testing event loop is shut down");
    tasks_.push_back(std::move(fn));
  }
  wake_.notify_one();
}

void AsyncTestingEventLoop::thread_main() {
  loop_thread_id_.store(std::this_thread::get_id(), std::memory_order_release);
  detail::CurrentExecutorScope scope(this);
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return !tasks_.empty() || stopping_; });
    if (tasks_.empty() && stopping_) break;
    busy_ = true;
    lock.unlock();
    drain();
    lock.lock();
    if (tasks_.empty()) {
      busy_ = false;
      next_deadline_.store(next_scheduled_deadline(), std::memory_order_release);
      idle_.notify_all();
    }
  }
  lock.unlock();
  cancel_scheduled_tasks();
  next_deadline_.store(-1, std::memory_order_release);
  terminated_.store(true, std::memory_order_release);
  termination_.try_set_value();
  lock.lock();
  busy_ = false;
  idle_.notify_all();
}

void AsyncTestingEventLoop::run_guarded(UniqueFunction<void()>& fn) noexcept {
  try {
    fn();
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (!task_error_) task_error_ = std::current_exception();
  }
}

void AsyncTestingEventLoop::drain() {
  while (true) {
    std::deque<UniqueFunction<void()>> batch;
    {
      std::lock_guard lock(mutex_);
      batch.swap(tasks_);
    }
    for (auto& fn : batch) run_guarded(fn);
    std::size_t ran = 0;
    try {
      ran = run_due_scheduled_tasks(current_time_nanos());
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!task_error_) task_error_ = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    if (tasks_.empty() && ran == 0) return;
  }
}

void AsyncTestingEventLoop::advance_on_loop(std::int64_t target) {
  while (auto* task = poll_scheduled_task(target)) {
    now_.store(std::max(now_.load(std::memory_order_relaxed), task->deadline_nanos()),
               std::memory_order_release);
    run_scheduled_task(task);
    drain();
  }
  if (target > now_.load(std::memory_order_relaxed)) now_.store(target, std::memory_order_release);
  drain();
}

void AsyncTestingEventLoop::rethrow_task_exception() {
  std::exception_ptr error;
  {
    std::lock_guard lock(mutex_);
    error = std::exchange(task_error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

void AsyncTestingEventLoop::run() {
  if (in_event_loop()) {
    drain();
  } else {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return (tasks_.empty() && !busy_) || terminated_.load(); });
  }
  rethrow_task_exception();
}

void AsyncTestingEventLoop::advance_by(std::chrono::nanoseconds d) {
  if (d.count() < 0) throw InvalidArgumentError("advance_by: negative duration");
  const std::int64_t now = current_time_nanos();
  advance_to(std::chrono::nanoseconds(detail::deadline_after(now, d.count())));
}

void AsyncTestingEventLoop::advance_to(std::chrono::nanoseconds t) {
  const std::int64_t target = t.count();
  if (in_event_loop()) {
    advance_on_loop(target);
  } else {
    submit([this, target] { advance_on_loop(target); }).get();
  }
  run();
}

std::size_t AsyncTestingEventLoop::run_until_idle(bool auto_advance, std::size_t max_jumps) {
  run();
  std::size_t jumps = 0;
  while (auto_advance) {
    const std::int64_t next = next_scheduled_task_nanos();
    if (next < 0) break;
    if (jumps == max_jumps) {
      throw IllegalStateError("run_until_idle: still busy after " + std::to_string(max_jumps) +
                              " time jumps (a periodic task?)");
    }
    advance_to(std::chrono::nanoseconds(std::max(next, current_time_nanos())));
    ++jumps;
  }
  return jumps;
}

void AsyncTestingEventLoop::wait_for_completion(detail::StateBase* state) {
  if (in_event_loop()) {
    throw IllegalStateError("block_on called on the loop's own thread would deadlock");
  }
  while (!state->is_done()) {
    run();
    if (state->is_done()) break;
    const std::int64_t next = next_scheduled_task_nanos();
    if (next >= 0) {
      advance_to(std::chrono::nanoseconds(std::max(next, current_time_nanos())));
      continue;
    }
    // Nothing on this loop can complete it: maybe another thread will.
    if (!state->wait_for(kBlockOnIdleWait) && next_scheduled_task_nanos() < 0) {
      throw IllegalStateError(
          "block_on: the future did not complete and the loop has no work or timer left");
    }
  }
}

void AsyncTestingEventLoop::shutdown_and_join() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    if (std::this_thread::get_id() == thread_.get_id()) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }
}

Future<void> AsyncTestingEventLoop::do_shutdown_gracefully(std::chrono::nanoseconds,
                                                           std::chrono::nanoseconds) {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  return termination_.future();
}

}  // namespace trellis
