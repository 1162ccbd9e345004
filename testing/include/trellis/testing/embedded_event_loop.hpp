// EmbeddedEventLoop: an executor that runs nothing by itself and whose clock the test controls
// (freeze, unfreeze, advance_by), so codecs, handlers, timeouts and coroutine tasks are tested
// deterministically without threads or sockets. Not thread-safe: drive it from one thread (use
// AsyncTestingEventLoop to drive a virtual-time loop from several threads).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>

#include <trellis/pipeline/abstract_scheduled_event_executor.hpp>

namespace trellis {

/// An executor that runs nothing by itself and whose clock the test controls (freeze, unfreeze,
/// advance_by): codecs, handlers, timeouts and coroutine tasks are tested deterministically
/// without threads or sockets. Not thread-safe: drive it from one thread.
class EmbeddedEventLoop final : public AbstractScheduledEventExecutor {
 public:
  /// A loop with nothing queued, its clock running.
  EmbeddedEventLoop();
  ~EmbeddedEventLoop() override;

  /// Queues fn; it runs on the next run_pending_tasks() (RejectedExecutionError once shut down).
  void execute(UniqueFunction<void()> fn) override;
  /// Always true: the test thread is the loop thread.
  bool in_event_loop() const override { return true; }
  /// Completes once the loop has shut down.
  Future<void> termination_future() override { return termination_.future(); }
  /// True once shut down.
  bool is_shutting_down() const override { return shut_down_; }
  /// True once shut down.
  bool is_terminated() const override { return shut_down_; }

  /// While not frozen: the monotonic clock plus everything advanced so far. While frozen: the
  /// value at freeze_time() plus what was advanced since.
  std::int64_t current_time_nanos() const override;

  /// Runs queued tasks until the queue is empty (tasks queued meanwhile run too). Returns how
  /// many ran.
  std::size_t run_pending_tasks();
  /// Runs every scheduled task whose deadline is <= now, in deadline order; returns the next
  /// deadline in nanoseconds, or -1 when nothing is scheduled.
  std::int64_t run_scheduled_pending_tasks();
  /// The next scheduled deadline, or -1.
  std::int64_t next_scheduled_task_nanos() const noexcept { return next_scheduled_deadline(); }
  /// How many tasks are queued for run_pending_tasks().
  std::size_t pending_task_count() const noexcept { return tasks_.size(); }

  /// Internal: queues a scheduled task and counts it in schedule_calls().
  void schedule_task(detail::ScheduledTaskBase* task) override {
    ++schedule_calls_;
    AbstractScheduledEventExecutor::schedule_task(task);
  }
  /// Internal: cancels a scheduled task and counts it in cancel_calls().
  void cancel_scheduled_task(detail::ScheduledTaskBase* task) override {
    ++cancel_calls_;
    AbstractScheduledEventExecutor::cancel_scheduled_task(task);
  }
  /// Tasks handed to the timer queue since construction (schedule*, not the re-queue of a
  /// periodic task). Tests use it and cancel_calls() to show that a path touches no timer.
  std::uint64_t schedule_calls() const noexcept { return schedule_calls_; }
  /// Cancellations of queued scheduled tasks since construction.
  std::uint64_t cancel_calls() const noexcept { return cancel_calls_; }

  /// Cancels every scheduled task (EmbeddedChannel does this when it closes).
  using AbstractScheduledEventExecutor::cancel_scheduled_tasks;

  /// Stops the clock: current_time_nanos() moves only by advance_by().
  void freeze_time();
  /// Lets the clock run again from where it stands.
  void unfreeze_time();
  /// True between freeze_time() and unfreeze_time().
  bool is_time_frozen() const noexcept { return frozen_; }
  /// Moves time forward by d and runs, in deadline order, every scheduled task that becomes due
  /// (including tasks scheduled by those tasks inside the window), each seeing
  /// current_time_nanos() equal to its own deadline; queued tasks run after each of them.
  void advance_by(std::chrono::nanoseconds d);

 protected:
  /// Runs the queued tasks, cancels the scheduled ones and shuts down at once (the quiet period
  /// and timeout do not apply).
  Future<void> do_shutdown_gracefully(std::chrono::nanoseconds quiet_period,
                                      std::chrono::nanoseconds timeout) override;

 private:
  std::deque<UniqueFunction<void()>> tasks_;
  bool frozen_ = false;
  std::int64_t frozen_at_ = 0;
  std::int64_t advanced_ = 0;
  // While advance_by runs a task: the task's deadline is "now".
  bool pinned_ = false;
  std::int64_t pinned_at_ = 0;
  bool shut_down_ = false;
  Promise<void> termination_;
  std::uint64_t schedule_calls_ = 0;
  std::uint64_t cancel_calls_ = 0;
};

}  // namespace trellis
