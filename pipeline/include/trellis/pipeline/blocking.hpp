// Blocking sections: `co_await trellis::blocking(fn)` and `trellis::blocking_section(fn)` run
// blocking code (a file read, a legacy client) without stalling a pool worker or an event loop.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

#include <trellis/pipeline/awaitables.hpp>
#include <trellis/pipeline/detail/blocker_cache.hpp>
#include <trellis/pipeline/detail/thread_role.hpp>
#include <trellis/pipeline/event_executor.hpp>

namespace trellis {

namespace detail {

enum class BlockingPlan : bool { kInPlace, kShift };

// How a co_await blocking(...) of a task on executor runs. On a worker of a WorkStealingPool
// (with in-place blocking) it first hands the worker role off, then answers kInPlace.
BlockingPlan plan_blocking(EventExecutor* executor);
// Starts job on a blocker thread: executor's own cache for a WorkStealingPool, else the process-
// wide one. Sets pool to the WorkStealingPool that counts the job as outstanding (or nullptr)
// before the job can start. Returns false (job untouched) when refused (after shutdown).
bool shift_blocking(EventExecutor* executor, UniqueFunction<void()>& job, WorkStealingPool*& pool);
void end_shift(WorkStealingPool* pool) noexcept;
// The slow path of blocking_section on a thread that may not block yet.
void enter_blocking_section();

template <class F>
class [[nodiscard]] BlockingAwaiter {
 public:
  using R = std::invoke_result_t<F&>;
  static_assert(!std::is_reference_v<R>, "blocking(fn): fn must return by value");

  explicit BlockingAwaiter(F fn) noexcept(std::is_nothrow_move_constructible_v<F>)
      : fn_(std::move(fn)) {}

  // Already on a thread that may block (a blocker, or a task that handed its worker role off
  // earlier in this run): just a flag check, fn runs in await_resume.
  bool await_ready() const noexcept { return thread_may_block(); }

  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    auto* ctx = task_context_of(h);
    EventExecutor* ex = ctx && ctx->executor ? ctx->executor : current_executor();
    if (plan_blocking(ex) == BlockingPlan::kInPlace) return false;
    shifted_ = true;  // before the job can resume us on another thread
    UniqueFunction<void()> job([this, h, ex] { run_shifted(ex, h); });
    if (shift_blocking(ex, job, pool_)) return true;
    shifted_ = false;  // refused: run in place after all
    return false;
  }

  R await_resume() {
    if (!shifted_) return std::invoke(fn_);
    if (refused_) throw_resumption_refused();
    if (error_) std::rethrow_exception(error_);
    if constexpr (!std::is_void_v<R>) return std::move(*value_);
  }

 private:
  void run_shifted(EventExecutor* ex, std::coroutine_handle<> h) noexcept {
    try {
      if constexpr (std::is_void_v<R>) {
        std::invoke(fn_);
      } else {
        value_.emplace(std::invoke(fn_));
      }
    } catch (...) {
      error_ = std::current_exception();
    }
    // The resumption waits until this thread is idle in its cache again, so the task's next
    // blocking call reuses it. *this may be gone once the task resumes.
    UniqueFunction<void()> resume([ex, h, pool = pool_, refused = &refused_] {
      resume_on_executor(ex, h, *refused);
      end_shift(pool);
    });
    if (!defer_until_idle(resume)) resume();
  }

  struct Empty {};
  F fn_;
  [[no_unique_address]] std::conditional_t<std::is_void_v<R>, Empty, std::optional<R>> value_;
  std::exception_ptr error_;
  WorkStealingPool* pool_ = nullptr;
  bool shifted_ = false;
  bool refused_ = false;  // the task's executor refused to take it back
};

}  // namespace detail

/// co_await blocking(fn): runs fn where blocking cannot stall the task's executor and returns its
/// result (or rethrows its exception).
/// - On a WorkStealingPool worker: in place. The thread hands its worker role to a cached (or new)
///   blocker thread and runs fn itself; it keeps running the task as a blocker, so later blocking
///   calls of the task cost a flag check, until the task next suspends; then the task continues
///   on the pool and the thread returns to the cache.
/// - On an event loop or any other executor: fn runs on a cached blocker thread (one hop out) and
///   the task resumes on its executor (one hop back).
/// - With no executor at all (plain code): fn runs inline.
/// Name a capturing lambda on its own line before `co_await blocking(lambda)` (a g++ 12 bug).
template <class F>
detail::BlockingAwaiter<std::decay_t<F>> blocking(F&& fn) {
  return detail::BlockingAwaiter<std::decay_t<F>>(std::forward<F>(fn));
}

/// blocking_section(fn): the synchronous form, for plain code that is about to block (like
/// scala.concurrent.blocking). On a WorkStealingPool worker it hands the worker role off first;
/// nested inside another section, or on a blocker thread, it is a flag check. Elsewhere (an event
/// loop thread, a user thread) it just calls fn: use co_await blocking(fn) on a loop.
template <class F>
decltype(auto) blocking_section(F&& fn) {
  if (!detail::thread_may_block()) detail::enter_blocking_section();
  return std::invoke(std::forward<F>(fn));
}

/// The process-wide blocker threads used by blocking() on executors that cannot hand off their
/// role (event loops, ThreadPoolExecutor): keep-alive 60 s, at most 512 threads, unless
/// configure_default_blocker_cache() said otherwise before its first use.
detail::BlockerCache& default_blocker_cache();

/// Settings of default_blocker_cache().
struct BlockerCacheSettings {
  /// How long an idle blocker thread waits for the next blocking call before it exits.
  std::chrono::nanoseconds keep_alive = std::chrono::seconds(60);
  /// The most blocker threads alive at once; a blocking call beyond them waits for the next
  /// thread to finish its call.
  std::size_t max_threads = 512;
};

/// Sets the settings of default_blocker_cache(). Call it before the cache is first used (the
/// first blocking() on an event loop, usually at the start of main): the cache's threads would
/// have been started under the old settings, so once it exists this throws IllegalStateError.
/// A max_threads of 0 or a negative keep_alive throws InvalidArgumentError.
void configure_default_blocker_cache(const BlockerCacheSettings& settings);

}  // namespace trellis
