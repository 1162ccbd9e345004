// AsyncTestingEventLoop: a thread-safe event loop on its own thread whose clock moves only when
// the test says so (advance_by/advance_to), like SwiftNIO's NIOAsyncTestingEventLoop. Work
// submitted to it runs at once on its thread; timers wait for virtual time. run_until_idle(true)
// and block_on() jump time to the next timer whenever nothing else is ready (tokio's
// auto-advance), so a `co_await sleep_for(1h)` finishes in microseconds of wall time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include <trellis/pipeline/abstract_scheduled_event_executor.hpp>

namespace trellis {

/// A thread-safe event loop on its own thread whose clock moves only when the test says so
/// (advance_by/advance_to), like SwiftNIO's NIOAsyncTestingEventLoop. Work submitted to it runs
/// at once on its thread; timers wait for virtual time. run_until_idle(true) and block_on() jump
/// time to the next timer whenever nothing else is ready. Every member may be called from any
/// thread.
class AsyncTestingEventLoop final : public AbstractScheduledEventExecutor {
 public:
  /// How long block_on waits in real time for a future that no timer can complete (something
  /// on another thread may still complete it) before giving up with IllegalStateError.
  static constexpr std::chrono::seconds kBlockOnIdleWait{5};

  /// Starts the loop thread; virtual time starts at 0.
  AsyncTestingEventLoop();
  /// Shuts down (scheduled tasks are cancelled) and joins the thread.
  ~AsyncTestingEventLoop() override;
  AsyncTestingEventLoop(const AsyncTestingEventLoop&) = delete;
  AsyncTestingEventLoop& operator=(const AsyncTestingEventLoop&) = delete;

  /// Queues fn for the loop thread (RejectedExecutionError once shut down).
  void execute(UniqueFunction<void()> fn) override;
  /// True on the loop thread.
  bool in_event_loop() const override {
    return std::this_thread::get_id() == loop_thread_id_.load(std::memory_order_acquire);
  }
  /// The virtual time, from 0.
  std::int64_t current_time_nanos() const override { return now_.load(std::memory_order_acquire); }
  /// Completes once the loop thread has stopped.
  Future<void> termination_future() override { return termination_.future(); }
  /// True once a shutdown has begun.
  bool is_shutting_down() const override;
  /// True once the loop thread has stopped.
  bool is_terminated() const override { return terminated_.load(std::memory_order_acquire); }

  // The calls below block the calling thread until the loop has done the work (from the loop
  // thread itself they do it inline). Each rethrows the first exception a task threw since
  // the last call.

  /// Waits until no work is ready (queued tasks, and timers due at the current time). Blocks the
  /// calling thread (from the loop thread it runs the work inline) and rethrows the first
  /// exception a task threw since the last such call, as do the calls below.
  void run();
  /// Moves time forward by d, running every timer that falls due in deadline order, each
  /// seeing current_time_nanos() equal to its deadline; then run().
  void advance_by(std::chrono::nanoseconds d);
  /// Moves time to the absolute virtual time t (nothing happens when t is in the past).
  void advance_to(std::chrono::nanoseconds t);
  /// run(); then, with auto_advance, jumps to the next timer and runs again until no timer is
  /// left. Returns the number of jumps. Periodic tasks never let it finish: after max_jumps it
  /// throws IllegalStateError (use block_on to wait for one result instead).
  std::size_t run_until_idle(bool auto_advance = true, std::size_t max_jumps = 1'000'000);
  /// Runs (auto-advancing time) until f completes, then returns its value or throws.
  template <class T>
  T block_on(Future<T> f) {
    wait_for_completion(f.state());
    return std::move(f).get();
  }
  /// Spawns task on this loop and block_on's its result.
  template <class T>
  T block_on(Task<T> task) {
    return block_on(spawn(std::move(task)));
  }

  /// The earliest timer deadline, or -1 (as of the last time the loop went idle).
  std::int64_t next_scheduled_task_nanos() const noexcept {
    return next_deadline_.load(std::memory_order_acquire);
  }

 protected:
  /// Stops accepting tasks and lets the loop thread stop (the quiet period and timeout do not
  /// apply).
  Future<void> do_shutdown_gracefully(std::chrono::nanoseconds quiet_period,
                                      std::chrono::nanoseconds timeout) override;

 private:
  void thread_main();
  // Loop thread: runs queued tasks and due timers until neither is left.
  void drain();
  void advance_on_loop(std::int64_t target);
  void run_guarded(UniqueFunction<void()>& fn) noexcept;
  void rethrow_task_exception();
  void wait_for_completion(detail::StateBase* state);
  void shutdown_and_join();

  mutable std::mutex mutex_;
  std::condition_variable wake_;  // the loop: work arrived
  std::condition_variable idle_;  // waiters: the loop went idle
  std::deque<UniqueFunction<void()>> tasks_;
  bool busy_ = false;
  bool stopping_ = false;
  std::exception_ptr task_error_;

  std::atomic<std::int64_t> now_{0};
  std::atomic<std::int64_t> next_deadline_{-1};
  std::atomic<std::thread::id> loop_thread_id_{};
  std::atomic<bool> terminated_{false};
  Promise<void> termination_;
  std::thread thread_;
};

}  // namespace trellis
