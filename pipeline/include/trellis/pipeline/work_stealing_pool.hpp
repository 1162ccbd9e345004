// WorkStealingPool: a compute executor with one worker per core, a local queue per worker that
// idle workers steal from, and blocking sections that hand the worker role to a cached thread
// instead of stalling the worker (see blocking.hpp and docs/blocking.md).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <trellis/pipeline/abstract_scheduled_event_executor.hpp>
#include <trellis/pipeline/detail/blocker_cache.hpp>

namespace trellis {

namespace detail {
struct PoolJob;
}

/// A compute executor with one worker per core, a local queue per worker that idle workers
/// steal from, and blocking sections (blocking(), blocking_section()) that hand the worker role
/// to a cached thread instead of stalling the worker. Every public member may be called from any
/// thread unless said otherwise; execute() throws RejectedExecutionError once the pool has shut
/// down.
class WorkStealingPool final : public AbstractScheduledEventExecutor {
 public:
  /// How a pool is built.
  struct Options {
    /// Workers; 0 means one per core.
    std::size_t threads = 0;
    /// How long an idle blocker thread stays cached.
    std::chrono::nanoseconds blocker_keep_alive = std::chrono::seconds(60);
    /// Most threads of the pool alive at once, workers included. At the cap a blocking section on
    /// a worker runs without handing the worker role off (it stalls that worker).
    std::size_t max_threads = 512;
    /// true: blocking on a worker runs in place and hands the worker role off (the design).
    /// false: blocking hops to a blocker thread and back for every section (for comparison).
    bool in_place_blocking = true;
    /// Worker threads are named "<name>-N" (blocker threads "trellis-blocker-N").
    std::string name = "trellis-ws";
  };

  /// One worker per core.
  WorkStealingPool();
  /// `threads` workers (0: one per core).
  explicit WorkStealingPool(std::size_t threads);
  /// A pool built as `options` says.
  explicit WorkStealingPool(Options options);
  /// Shuts down without a quiet period and joins every thread (workers and blockers), so it waits
  /// for running blocking sections to return. Not from one of the pool's threads.
  ~WorkStealingPool() override;
  WorkStealingPool(const WorkStealingPool&) = delete;
  WorkStealingPool& operator=(const WorkStealingPool&) = delete;

  /// From a worker: onto its local queue. From anywhere else: onto the shared injection queue.
  void execute(UniqueFunction<void()> fn) override;
  /// True on a thread that currently holds a worker role of this pool (not on blocker threads:
  /// they may block, so Future::get() is allowed there).
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

  /// Number of workers.
  std::size_t worker_count() const noexcept { return workers_.size(); }
  /// Options::in_place_blocking of this pool.
  bool in_place_blocking() const noexcept { return in_place_; }

  // Counters for tests and benchmarks.
  /// Threads started for blocking since construction (the initial workers are not counted).
  std::uint64_t blocker_threads_created() const { return cache_.threads_created(); }
  /// Threads alive that hold no worker role: running a blocking section, or cached.
  std::size_t live_blocker_threads() const;
  /// Blocker threads idle in the cache.
  std::size_t cached_blocker_threads() const { return cache_.idle_threads(); }
  /// Hand-offs of a worker role to another thread since construction.
  std::uint64_t hand_offs() const noexcept { return hand_offs_.load(std::memory_order_relaxed); }

  /// Internal: the cache this pool's blocker threads live in.
  detail::BlockerCache& blocker_cache() noexcept { return cache_; }

  /// Internal, for blocking(): on a thread holding a worker role of this pool, gives the role to a
  /// cached (or new) thread; the caller's thread becomes a blocker until its current job returns.
  /// Returns false (nothing changed) when the thread cap is reached.
  bool hand_off_worker_role();
  /// Internal: brackets a blocking job shifted to this pool's blocker threads, so shutdown
  /// waits for it (begin).
  void begin_outstanding_blocking() noexcept;
  /// Internal: the end of the bracket begun by begin_outstanding_blocking().
  void end_outstanding_blocking() noexcept;

 protected:
  /// Starts the graceful shutdown (see EventExecutor::shutdown_gracefully).
  Future<void> do_shutdown_gracefully(std::chrono::nanoseconds quiet_period,
                                      std::chrono::nanoseconds timeout) override;

 private:
  struct Worker;
  using Job = detail::PoolJob;

  void worker_loop(Worker& w);
  // A replacement thread's job: take whichever worker role is offered (see hand_off_worker_role).
  void claim_offered_role();
  Job* next_job(Worker& w);
  Job* search(Worker& w);
  Job* steal(Worker& w);
  void leave_search(const Worker& w);
  Job* take_injected();
  bool work_visible(const Worker& w) const noexcept;
  void push_injected(Job* job);
  void push_due_timers(Worker& w);
  void on_scheduled_task_added(std::int64_t deadline) override;
  void notify_one();
  void notify_all();
  bool remove_idle(Worker& w);
  bool should_stop(std::int64_t now) const;
  std::int64_t park_deadline(Worker& w, bool& watching);
  void stop_worker();
  void finalize_stop();
  void run_timer(detail::ScheduledTaskBase* task);
  void mark_activity() noexcept;

  const bool in_place_;
  std::string name_;
  std::vector<std::unique_ptr<Worker>> workers_;
  detail::BlockerCache cache_;

  // Shared injection queue: an intrusive list under a mutex, its size readable without it.
  mutable std::mutex inject_mutex_;
  Job* inject_head_ = nullptr;
  Job* inject_tail_ = nullptr;
  std::atomic<std::size_t> injected_{0};
  std::atomic<bool> stopped_{false};  // every worker stopped: set under both queue mutexes

  // Parking: idle workers (LIFO), how many, and how many are looking for work. A wake-up goes to
  // one idle worker only when nobody is searching, and counts it as searching at once, so a burst
  // of submissions wakes workers one at a time instead of all of them.
  std::mutex idle_mutex_;
  std::vector<Worker*> idle_;
  std::atomic<std::size_t> idle_count_{0};
  std::atomic<std::size_t> searching_{0};

  // Timers: the base-class queue under timer_mutex_; its earliest deadline readable without it;
  // the index of the one parked worker that sleeps until that deadline (-1: none).
  std::mutex timer_mutex_;
  std::atomic<std::int64_t> next_deadline_;
  std::atomic<int> timer_watcher_{-1};

  // Lifecycle.
  std::atomic<bool> shutting_down_{false};
  std::atomic<bool> terminated_{false};
  std::atomic<std::int64_t> quiet_nanos_{0};
  std::atomic<std::int64_t> shutdown_deadline_{0};
  std::atomic<std::int64_t> last_activity_{0};
  std::atomic<std::size_t> running_workers_{0};
  std::atomic<std::size_t> outstanding_blocking_{0};
  std::atomic<std::uint64_t> hand_offs_{0};
  // Replacement threads on their way with no offered role left for them (their role was taken
  // back): the next hand-off reserves one instead of starting another thread.
  std::atomic<std::int64_t> spare_claimers_{0};
  Promise<void> termination_;
};

}  // namespace trellis
