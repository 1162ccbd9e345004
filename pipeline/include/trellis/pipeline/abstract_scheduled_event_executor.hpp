// AbstractScheduledEventExecutor: the scheduled-task queue and the one virtual clock every
// deadline of the framework is computed from. Override current_time_nanos() and every scheduled
// future, sleep, timeout and keep-alive timer of that executor follows the new clock.
//
// Periodic tasks and clock jumps: when the clock jumps N periods at once, a fixed-rate task runs
// N times in a row (each run advances its deadline by one period, and the new deadline is still
// due), while a fixed-delay task runs once (its next deadline is now + delay).
#pragma once

#include <cstdint>

#include <trellis/pipeline/detail/scheduled_task_queue.hpp>
#include <trellis/pipeline/event_executor.hpp>

namespace trellis {

/// The base of the executors with a scheduled-task queue (event loops, ThreadPoolExecutor,
/// WorkStealingPool): the queue and the one clock every deadline of the executor is computed
/// from. Override current_time_nanos() and every scheduled future, sleep, timeout and keep-alive
/// timer of that executor follows the new clock. The protected members are for executor
/// implementations and run on the owning thread unless said otherwise.
class AbstractScheduledEventExecutor : public EventExecutor {
 public:
  /// Monotonic nanoseconds (std::chrono::steady_clock) unless overridden.
  std::int64_t current_time_nanos() const override { return monotonic_nanos(); }
  /// The monotonic clock (std::chrono::steady_clock), in nanoseconds.
  static std::int64_t monotonic_nanos() noexcept;
  /// The same monotonic clock at the kernel's tick (CLOCK_MONOTONIC_COARSE: no time-stamp counter
  /// read, ~4 ns instead of ~27 on the benchmark machine), never ahead of it and usually at most
  /// one tick (1-10 ms) behind; on a virtual machine whose tick comes late, a little more.
  static std::int64_t coarse_monotonic_nanos() noexcept;

  /// Internal: queues `task` (from any thread; from another thread it travels through
  /// execute()).
  void schedule_task(detail::ScheduledTaskBase* task) override;
  /// Internal: removes a cancelled task from the queue (from any thread), O(log n).
  void cancel_scheduled_task(detail::ScheduledTaskBase* task) override;

  /// Number of queued scheduled tasks (owning thread only).
  std::size_t scheduled_task_count() const noexcept { return scheduled_.size(); }

 protected:
  /// The earliest deadline queued, or -1. Owning thread only, as are the functions below.
  std::int64_t next_scheduled_deadline() const noexcept { return scheduled_.next_deadline(); }
  /// True when a task is queued.
  bool has_scheduled_tasks() const noexcept { return !scheduled_.empty(); }
  /// Removes and returns the earliest task if its deadline is <= now, else nullptr. The caller
  /// owns the returned reference and passes it to run_scheduled_task().
  detail::ScheduledTaskBase* poll_scheduled_task(std::int64_t now) noexcept;
  /// Runs a polled task and re-queues it if periodic.
  void run_scheduled_task(detail::ScheduledTaskBase* task);
  /// Runs every task due at now (periodic tasks catch up). Returns how many ran.
  std::size_t run_due_scheduled_tasks(std::int64_t now);
  /// Cancels and drops every queued task (at shutdown).
  /// Cancelling a task's sleep resumes the task inline (with CancelledError), and it may schedule
  /// again: those are cancelled in further rounds (a few; a task that keeps sleeping after being
  /// cancelled that often is left queued).
  void cancel_scheduled_tasks() {
    for (int round = 0; round < 8; ++round) {
      auto tasks = take_scheduled_tasks();
      if (tasks.empty()) return;
      cancel_and_release(tasks);
    }
  }
  /// The two halves of cancel_scheduled_tasks(), for executors that guard the queue with a lock:
  /// take the tasks under the lock, cancel them outside it.
  std::vector<detail::ScheduledTaskBase*> take_scheduled_tasks() { return scheduled_.take_all(); }
  /// Cancels `tasks` and releases the queue's reference of each.
  static void cancel_and_release(const std::vector<detail::ScheduledTaskBase*>& tasks) noexcept;

  /// Removes task from the queue if queued (owning thread).
  bool remove_scheduled_task(detail::ScheduledTaskBase* task) noexcept {
    return scheduled_.remove(task);
  }
  /// Adds task to the queue on the owning thread.
  void add_scheduled_task(detail::ScheduledTaskBase* task);
  /// add_scheduled_task() without on_scheduled_task_added(), for executors that take in tasks
  /// in batches and re-arm once. Returns whether task was queued (false: it was cancelled on its
  /// way, and its reference is released).
  bool queue_scheduled_task(detail::ScheduledTaskBase* task) {
    if (task->state().is_done()) [[unlikely]] {  // cancelled on its way here
      task->state().release();
      return false;
    }
    task->taken_in.store(true, std::memory_order_relaxed);
    scheduled_.push(task);
    return true;
  }
  /// Called after a task was queued on the owning thread (loops re-arm their timer here).
  virtual void on_scheduled_task_added(std::int64_t /*deadline*/) {}
  /// How a task scheduled from another thread reaches the owning thread. The default executes
  /// add_scheduled_task(); loops override it to skip the wake-up when the deadline is not earlier
  /// than the one they will wake up for anyway.
  virtual void schedule_from_outside(detail::ScheduledTaskBase* task);

 private:
  detail::ScheduledTaskQueue scheduled_;
};

}  // namespace trellis
