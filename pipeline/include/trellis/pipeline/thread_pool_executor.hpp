// ThreadPoolExecutor: a small fixed pool of threads sharing one queue, with scheduling. It backs
// trellis::default_executor(), where tasks started without a loop run.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <trellis/pipeline/abstract_scheduled_event_executor.hpp>
#include <trellis/pipeline/default_executor.hpp>

namespace trellis {

/// A small fixed pool of threads sharing one queue, with scheduling. It backs
/// default_executor(), where tasks started without a loop run. Every public member may be called
/// from any thread; execute() throws RejectedExecutionError once the pool has shut down.
class ThreadPoolExecutor final : public AbstractScheduledEventExecutor {
 public:
  /// Starts `threads` threads named `<name>-N`.
  explicit ThreadPoolExecutor(std::size_t threads, std::string name = "trellis-pool");
  /// Shuts down (no quiet period) and joins the threads. Destroying the pool from one of its own
  /// threads is a programming error: it is reported and the process aborts.
  ~ThreadPoolExecutor() override;

  /// Queues `fn` for one of the threads (RejectedExecutionError after shutdown).
  void execute(UniqueFunction<void()> fn) override;
  /// True on one of the pool's threads.
  bool in_event_loop() const override;
  /// Internal: queues a scheduled task.
  void schedule_task(detail::ScheduledTaskBase* task) override;
  /// Internal: removes a cancelled scheduled task.
  void cancel_scheduled_task(detail::ScheduledTaskBase* task) override;
  /// Completes when every thread has stopped after a shutdown.
  Future<void> termination_future() override { return termination_.future(); }
  /// True once a shutdown started.
  bool is_shutting_down() const override;
  /// True once every thread has stopped.
  bool is_terminated() const override;
  /// Number of threads.
  std::size_t thread_count() const noexcept { return threads_.size(); }

 protected:
  /// Starts the graceful shutdown (see EventExecutor::shutdown_gracefully).
  Future<void> do_shutdown_gracefully(std::chrono::nanoseconds quiet_period,
                                      std::chrono::nanoseconds timeout) override;

 private:
  void run_worker(std::size_t index);
  void on_scheduled_task_added(std::int64_t) override { cv_.notify_one(); }

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<UniqueFunction<void()>> tasks_;
  std::vector<std::thread> threads_;
  std::string name_;
  Promise<void> termination_;
  bool shutting_down_ = false;
  bool terminated_ = false;
  std::int64_t quiet_nanos_ = 0;
  std::int64_t shutdown_deadline_ = 0;
  std::int64_t last_activity_ = 0;
  std::size_t running_workers_ = 0;
};

}  // namespace trellis
