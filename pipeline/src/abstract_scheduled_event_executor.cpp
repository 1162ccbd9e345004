// The scheduled-task queue behind every executor (see abstract_scheduled_event_executor.hpp).
#include <trellis/pipeline/abstract_scheduled_event_executor.hpp>

#include <time.h>

#include <chrono>

#include <spdlog/spdlog.h>

namespace trellis {

std::int64_t AbstractScheduledEventExecutor::monotonic_nanos() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t AbstractScheduledEventExecutor::coarse_monotonic_nanos() noexcept {
  // steady_clock is CLOCK_MONOTONIC on Linux: the coarse clock runs on the same timeline.
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void AbstractScheduledEventExecutor::schedule_task(detail::ScheduledTaskBase* task) {
  if (in_event_loop()) {
    add_scheduled_task(task);
    return;
  }
  try {
    schedule_from_outside(task);
  } catch (...) {
    task->state().try_fail(std::current_exception());
    task->state().release();
    throw;
  }
}

void AbstractScheduledEventExecutor::schedule_from_outside(detail::ScheduledTaskBase* task) {
  execute([this, task] { add_scheduled_task(task); });
}

void AbstractScheduledEventExecutor::add_scheduled_task(detail::ScheduledTaskBase* task) {
  if (queue_scheduled_task(task)) on_scheduled_task_added(task->deadline_nanos());
}

void AbstractScheduledEventExecutor::cancel_scheduled_task(detail::ScheduledTaskBase* task) {
  if (in_event_loop()) {
    scheduled_.remove(task);
    return;
  }
  if (is_terminated()) return;
  task->state().add_ref();
  try {
    execute([this, task] {
      scheduled_.remove(task);
      task->state().release();
    });
  } catch (...) {
    // Shut down meanwhile: the queue was cleared when the executor stopped.
    task->state().release();
  }
}

detail::ScheduledTaskBase* AbstractScheduledEventExecutor::poll_scheduled_task(
    std::int64_t now) noexcept {
  auto* top = scheduled_.top();
  if (!top || top->deadline_nanos() > now) return nullptr;
  return scheduled_.pop();
}

void AbstractScheduledEventExecutor::run_scheduled_task(detail::ScheduledTaskBase* task) {
  if (task->run()) {
    scheduled_.push(task);  // periodic: same node, same reference, no allocation
    on_scheduled_task_added(task->deadline_nanos());
  } else {
    task->state().release();
  }
}

std::size_t AbstractScheduledEventExecutor::run_due_scheduled_tasks(std::int64_t now) {
  std::size_t n = 0;
  while (auto* task = poll_scheduled_task(now)) {
    run_scheduled_task(task);
    ++n;
  }
  return n;
}

void AbstractScheduledEventExecutor::cancel_and_release(
    const std::vector<detail::ScheduledTaskBase*>& tasks) noexcept {
  for (auto* task : tasks) {
    task->state().cancel();
    task->state().release();
  }
}

}  // namespace trellis
