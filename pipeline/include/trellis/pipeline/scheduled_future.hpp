// ScheduledFuture<R>: the future of a task scheduled on an executor's clock, and the task node
// itself (one allocation holds the callable, the result and the queue bookkeeping).
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>

#include <trellis/pipeline/detail/node_cache.hpp>
#include <trellis/pipeline/future.hpp>

namespace trellis {

namespace detail {

inline constexpr std::size_t kNotQueued = std::numeric_limits<std::size_t>::max();

// Saturating now + delay: deadlines never overflow, a negative delay means "now".
constexpr std::int64_t deadline_after(std::int64_t now, std::int64_t delay) noexcept {
  if (delay <= 0) return now;
  return now > std::numeric_limits<std::int64_t>::max() - delay
             ? std::numeric_limits<std::int64_t>::max()
             : now + delay;
}

// What the scheduled-task queue knows of a task. Fields other than the deadline are touched only
// by the owning executor's thread.
class ScheduledTaskBase {
 public:
  ScheduledTaskBase(EventExecutor* executor, std::int64_t deadline, std::int64_t period) noexcept
      : scheduler_(executor), deadline_(deadline), period_(period) {}

  std::int64_t deadline_nanos() const noexcept { return deadline_.load(std::memory_order_relaxed); }
  void set_deadline_nanos(std::int64_t d) noexcept {
    deadline_.store(d, std::memory_order_relaxed);
  }
  // 0: one shot; > 0: fixed rate; < 0: fixed delay of -period.
  std::int64_t period_nanos() const noexcept { return period_; }
  EventExecutor* scheduler() const noexcept { return scheduler_; }

  virtual StateBase& state() noexcept = 0;
  // Runs the task. Returns true when a periodic task must be queued again (its deadline was
  // advanced); false when it is done (completed, failed or cancelled).
  virtual bool run() noexcept = 0;

  std::size_t heap_index = kNotQueued;
  std::uint64_t sequence = 0;
  // Links of the lock-free lists through which an event loop takes in tasks scheduled and
  // cancelled on other threads (see EventLoop).
  ScheduledTaskBase* inbox_next = nullptr;
  ScheduledTaskBase* cancel_next = nullptr;
  // Set by the owning thread when it takes the task into its queue. A cancellation from another
  // thread that finds it unset needs no message: the owner will see the task cancelled when it
  // takes it in (both sides order their write and read with a seq_cst fence).
  std::atomic<bool> taken_in{false};

 protected:
  ~ScheduledTaskBase() = default;

 private:
  EventExecutor* scheduler_;
  std::atomic<std::int64_t> deadline_;
  std::int64_t period_;
};

template <class R>
class ScheduledTask final : public FutureState<R>, public ScheduledTaskBase {
 public:
  // fn: any callable returning R (a UniqueFunction<R()> too), stored in place.
  template <class F>
  ScheduledTask(EventExecutor* executor, std::int64_t deadline, std::int64_t period, F&& fn)
      : FutureState<R>(executor),
        ScheduledTaskBase(executor, deadline, period),
        fn_(std::forward<F>(fn)) {}

  // Nodes come from a per-thread cache: scheduling in steady state allocates nothing.
  static void* operator new(std::size_t) { return NodeCache<sizeof(ScheduledTask)>::allocate(); }
  static void operator delete(void* p) noexcept { NodeCache<sizeof(ScheduledTask)>::deallocate(p); }

  StateBase& state() noexcept override { return *this; }

  bool run() noexcept override {
    if (period_nanos() == 0) {
      if (!this->try_begin_completion()) return false;  // cancelled
      try {
        if constexpr (std::is_void_v<R>) {
          fn_();
          this->complete_claimed();
        } else {
          this->complete_claimed(fn_());
        }
      } catch (...) {
        this->error_ = std::current_exception();
        this->finish_completion(FutureStatus::kFailure);
      }
      fn_.reset();
      return false;
    }
    if (this->is_done()) return false;
    try {
      fn_();
    } catch (...) {
      this->try_fail(std::current_exception());
      fn_.reset();
      return false;
    }
    if (this->is_done()) return false;
    auto p = period_nanos();
    set_deadline_nanos(p > 0 ? deadline_after(deadline_nanos(), p)
                             : deadline_after(scheduler()->current_time_nanos(), -p));
    return true;
  }

 private:
  void on_cancelled() noexcept override { scheduler()->cancel_scheduled_task(this); }

  UniqueFunction<R()> fn_;
};

}  // namespace detail

namespace detail {
// Tag: the future takes over a reference the caller already holds.
struct AdoptRef {};
inline constexpr AdoptRef kAdoptRef{};
}  // namespace detail

/// The future of a task scheduled on an executor's clock (EventExecutor::schedule and the
/// periodic variants): a Future<R> that also knows its deadline. cancel() takes the task off
/// the queue. Any thread may use it.
template <class R>
class ScheduledFuture : public Future<R> {
 public:
  /// An invalid future.
  ScheduledFuture() noexcept = default;
  /// Internal: the future of `task`, adding a reference.
  explicit ScheduledFuture(detail::ScheduledTask<R>* task) noexcept
      : Future<R>(detail::StateRef<detail::FutureState<R>>(task, true)), task_(task) {}
  /// Internal: the future of `task`, taking over a reference the caller holds.
  ScheduledFuture(detail::ScheduledTask<R>* task, detail::AdoptRef) noexcept
      : Future<R>(detail::StateRef<detail::FutureState<R>>(task, false)), task_(task) {}

  /// The deadline on the executor's clock (`current_time_nanos()`).
  std::int64_t deadline_nanos() const noexcept { return task_->deadline_nanos(); }
  /// Time left until the deadline on the executor's clock, in nanoseconds; 0 once due.
  std::int64_t delay_nanos() const noexcept {
    auto d = task_->deadline_nanos() - task_->scheduler()->current_time_nanos();
    return d > 0 ? d : 0;
  }

 private:
  detail::ScheduledTask<R>* task_ = nullptr;
};

}  // namespace trellis
