// EventLoop: one thread running one asio::io_context. It is an executor (tasks, scheduled tasks
// on one steady_timer armed at the earliest deadline, coroutine tasks) and the home of the
// channels registered with it. The io_context is created with ASIO_CONCURRENCY_HINT_UNSAFE_IO:
// Asio I/O objects on it (sockets, timers; the loop's own channels) must only be used on the
// loop's thread, which saves a mutex lock and unlock per readiness wait; posting to it from any
// thread stays safe.
//
// Time: the monotonic clock, or the ManualClock of EventLoopOptions::clock. Under a manual clock
// the loop waits on I/O and tasks only (no timer) and every advance of the clock wakes it to run
// what became due; a task executed on the loop after advance_by() returns runs after them.
// Under the monotonic clock, a schedule made by a task the loop runs counts its delay from the
// loop time: current_time_nanos() read once per batch of tasks (re-read every 64 tasks), so a
// task that schedules many timers pays one clock read. A task that has run long before it
// schedules gets its timer early by that long (libuv's uv_now() trade).
//
// Tasks scheduled and cancelled from other threads reach the loop through two lock-free lists
// linked through the task nodes themselves (one compare-and-swap each, no allocation, no lock).
// A schedule wakes the loop only when its deadline is earlier than the one the loop's timer is
// armed for. A cancellation of a task the loop has not taken in yet sends nothing (the loop drops
// it on taking it in); any other waits for the loop's next look, except every 1024th from a
// thread, which wakes it.
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <trellis/pipeline/abstract_scheduled_event_executor.hpp>
#include <trellis/pipeline/manual_clock.hpp>
#include <trellis/transport/event_loop_options.hpp>

namespace asio {
class io_context;
}  // namespace asio

namespace trellis {

/// One thread running one Asio `io_context`: an executor (tasks, scheduled tasks, coroutine
/// tasks) and the home of the channels registered with it. `execute`, `schedule*`, `spawn` and
/// the shutdown calls may be made from any thread; Asio I/O objects on `io_context()` only on
/// the loop's thread. After shutdown, `execute` fails with RejectedExecutionError.
class EventLoop final : public AbstractScheduledEventExecutor {
 public:
  /// Starts the loop's thread, named name (at most 15 characters are kept).
  explicit EventLoop(std::string name = {});
  /// Starts the loop's thread with options (its name and clock).
  explicit EventLoop(EventLoopOptions options);
  /// Shuts down without a quiet period and joins the thread. Destroying a standalone loop from
  /// its own thread cannot be made safe: it is reported and the process aborts. (A loop owned by
  /// an EventLoopGroup destroyed from one of its threads is kept alive until its thread ends.)
  ~EventLoop() override;
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  /// Runs fn on the loop's thread, in order with the other tasks (RejectedExecutionError after
  /// shutdown).
  void execute(UniqueFunction<void()> fn) override;
  /// True on the loop's thread.
  bool in_event_loop() const override;
  /// The monotonic clock, or the manual clock of the options. The production loop pays one
  /// well-predicted branch on a member for it.
  std::int64_t current_time_nanos() const override {
    if (clock_ != nullptr) [[unlikely]] {
      return clock_->now_nanos();
    }
    return monotonic_nanos();
  }
  /// The time a schedule counts its delay from: on the loop's thread, the loop time (read once
  /// per batch of tasks); elsewhere current_time_nanos().
  std::int64_t schedule_time_nanos() const override {
    if (detail::t_owning_loop == this && loop_time_ != kLoopTimeOff) [[likely]] {
      if (loop_time_ == kLoopTimeUnread) loop_time_ = current_time_nanos();
      return loop_time_;
    }
    return current_time_nanos();
  }
  /// The coarse monotonic clock (CLOCK_MONOTONIC_COARSE), or the manual clock of the options.
  std::int64_t coarse_time_nanos() const override {
    if (clock_ != nullptr) [[unlikely]] {
      return clock_->now_nanos();
    }
    return coarse_monotonic_nanos();
  }
  /// The manual clock the loop reads (EventLoopOptions::clock), or null.
  const std::shared_ptr<ManualClock>& manual_clock() const noexcept { return manual_clock_; }
  /// Internal: adds a scheduled task (on the loop's thread straight into the heap; from others
  /// through the lock-free inboxes).
  void schedule_task(detail::ScheduledTaskBase* task) override;
  /// Internal: cancels a scheduled task, from any thread.
  void cancel_scheduled_task(detail::ScheduledTaskBase* task) override;
  /// Completes when the loop's thread has stopped.
  Future<void> termination_future() override { return termination_.future(); }
  /// True once a shutdown has begun.
  bool is_shutting_down() const override;
  /// True once the loop's thread has stopped.
  bool is_terminated() const override;

  /// The loop's Asio context: Asio timers, resolvers and sockets run on the loop thread through
  /// it. This header only declares `asio::io_context`: include `<asio/io_context.hpp>` to use it.
  asio::io_context& io_context() noexcept { return *io_; }
  /// The executor of io_context(), for `asio::co_spawn` and Asio I/O objects. A template only
  /// so that this header need not see the complete `asio::io_context`: include
  /// `<asio/io_context.hpp>` to call it.
  template <class Context = asio::io_context>
  requires std::same_as<Context, asio::io_context>
  typename Context::executor_type asio_executor() noexcept {
    Context& io = *io_;
    return io.get_executor();
  }
  /// The loop thread's name.
  const std::string& name() const noexcept { return name_; }
  /// Cancels every scheduled task of the loop (on the loop's thread only), as Netty's
  /// cancelScheduledTasks(): benchmarks reset the queue with it between batches.
  using AbstractScheduledEventExecutor::cancel_scheduled_tasks;
  /// How many times work from outside woke the loop (posted a drain); for tests and benchmarks.
  std::uint64_t wakeups() const noexcept { return wakeups_.load(std::memory_order_relaxed); }

  /// Runs fn on the loop thread when the loop shuts down, before it stops (channels close here);
  /// at once (as a task) when the loop has run its shutdown hooks already. RejectedExecutionError
  /// once the loop is shut down.
  void on_shutdown(UniqueFunction<void()> fn);
  /// The loop's thread keeps self alive and releases it as the very last thing it does.
  void keep_alive_until_exit(std::shared_ptr<EventLoop> self);
  /// Waits for the loop's thread to end (after shutdown) and joins it. Not from the loop itself.
  void join();
  /// From now on shutdown_gracefully() throws IllegalStateError (for EventLoopGroup::singleton(),
  /// whose loops live as long as the process).
  void forbid_shutdown() noexcept { shutdown_forbidden_.store(true); }

 protected:
  /// Begins a shutdown: the loop runs until no task came for quiet_period, or until timeout.
  /// The quiet period and the timeout are measured on the monotonic clock even under a manual
  /// clock: a loop shuts down by itself however the test's clock moves.
  Future<void> do_shutdown_gracefully(std::chrono::nanoseconds quiet_period,
                                      std::chrono::nanoseconds timeout) override;

 private:
  enum State : int { kRunning, kShuttingDown, kShutdown, kTerminated };
  std::atomic<bool> shutdown_forbidden_{false};
  class LoopTimeScope;
  struct AsioState;  // the io_context and the loop's two timers (event_loop.cpp)

  void run();
  void post_drain();
  void drain();
  std::size_t run_queued_tasks();  // take_queued_tasks() then run_taken_tasks()
  void take_queued_tasks();
  std::size_t run_taken_tasks();
  void on_timer(std::uint64_t generation);
  void on_clock_advanced();
  void drain_if_pending();
  void rearm_timer();
  void on_scheduled_task_added(std::int64_t deadline) override;
  void schedule_from_outside(detail::ScheduledTaskBase* task) override;
  // Takes in what other threads scheduled and cancelled (loop thread); close: refuse any more.
  std::size_t take_in_foreign_tasks(bool close = false);
  bool foreign_tasks_pending() const noexcept;
  void check_shutdown();
  void finish_shutdown();

  std::string name_;
  std::shared_ptr<ManualClock> manual_clock_;
  const ManualClock* clock_;  // manual_clock_.get(), read on every time query
  ManualClock::SubscriptionId clock_subscription_ = 0;
  std::unique_ptr<AsioState> asio_;
  asio::io_context* io_;  // &asio_->io: one load to reach the context, as before the indirection

  std::mutex queue_mutex_;
  std::vector<UniqueFunction<void()>> incoming_;
  std::vector<UniqueFunction<void()>> running_;
  // Lock-free LIFO lists of tasks scheduled / cancelled from other threads (reversed when taken
  // in), or kInboxClosed once the loop has shut down.
  std::atomic<detail::ScheduledTaskBase*> schedule_inbox_{nullptr};
  std::atomic<detail::ScheduledTaskBase*> cancel_inbox_{nullptr};
  // schedule_time_nanos() on the loop thread: off outside batches of tasks; unread at the start
  // of one until a schedule reads the clock.
  static constexpr std::int64_t kLoopTimeOff = std::numeric_limits<std::int64_t>::min();
  static constexpr std::int64_t kLoopTimeUnread = kLoopTimeOff + 1;
  mutable std::int64_t loop_time_ = kLoopTimeOff;
  std::atomic<bool> drain_posted_{false};
  std::atomic<std::uint64_t> wakeups_{0};

  // The deadline the timer is armed for (INT64_MAX: none), read by other threads to decide
  // whether a task they schedule needs to wake the loop.
  std::atomic<std::int64_t> armed_deadline_;
  std::int64_t armed_ = 0;
  std::uint64_t timer_generation_ = 0;

  std::atomic<int> state_{kRunning};
  std::atomic<std::int64_t> quiet_nanos_{0};
  std::atomic<std::int64_t> shutdown_deadline_{0};
  std::int64_t last_activity_ = 0;  // monotonic, for the quiet period
  std::vector<UniqueFunction<void()>> shutdown_hooks_;
  bool hooks_taken_ = false;  // on the loop thread: finish_shutdown() ran (or runs) the hooks

  Promise<void> termination_;
  std::shared_ptr<EventLoop> self_;  // see keep_alive_until_exit
  bool exiting_ = false;
  std::thread thread_;
};

}  // namespace trellis
