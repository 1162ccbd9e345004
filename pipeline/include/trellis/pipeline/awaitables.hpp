// Suspension points for tasks: sleep_for (on the task's executor clock), yield (let other queued
// work run first) and resume_on (move the task to another executor). sleep_for and yield are
// cancellation points: a cancelled task wakes from them with CancelledError.
#pragma once

#include <atomic>
#include <chrono>
#include <coroutine>

#include <trellis/pipeline/event_executor.hpp>

namespace trellis {

namespace detail {

template <class P>
TaskContext* task_context_of(std::coroutine_handle<P> h) noexcept {
  if constexpr (requires { h.promise().context(); }) {
    return h.promise().context();
  } else {
    return nullptr;
  }
}

EventExecutor* executor_or_current(TaskContext* ctx);
// Resumes h on executor through execute(). On a blocker thread (a task that ran in place and now
// suspends) the post waits until the thread is back in its cache (see defer_until_idle). A refusal
// throws here, or (for a deferred post) sets refused before resuming h in place.
void post_resume(EventExecutor* executor, std::coroutine_handle<> h, bool& refused);
[[noreturn]] void throw_cancelled();

// The timer is a scheduled no-op whose completion (fired, cancelled by the task's cancellation,
// or cancelled by the executor's shutdown) resumes the task through a completion node embedded
// here: one path resumes, exactly once, whichever thread completes it. A cancellation that took
// the hook may still be using the awaiter when the timer resumes the task on another thread
// (pools): await_resume waits for it to let go (cancel_done_) before the awaiter can die.
class SleepAwaiter final : private CancelHook, private CompletionNode {
 public:
  explicit SleepAwaiter(std::int64_t nanos) noexcept : nanos_(nanos) {}
  bool await_ready() const noexcept { return nanos_ <= 0; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    ctx_ = task_context_of(h);
    if (ctx_ && ctx_->cancel_requested.load(std::memory_order_acquire)) {
      cancelled_ = true;
      return false;  // resume at once, with CancelledError
    }
    return suspend(executor_or_current(ctx_), h);
  }
  void await_resume() {
    if (hook_published_) release_hook();
    if (cancelled_) throw_cancelled();
    if (refused_) throw_resumption_refused();
  }

 private:
  bool suspend(EventExecutor* ex, std::coroutine_handle<> h);
  void release_hook() noexcept;
  void on_cancel() noexcept override;
  static void on_timer_done(CompletionNode* self, StateBase& state) noexcept;

  std::int64_t nanos_;
  TaskContext* ctx_ = nullptr;
  EventExecutor* executor_ = nullptr;
  std::coroutine_handle<> handle_;
  StateRef<FutureState<void>> timer_;
  bool cancelled_ = false;
  bool refused_ = false;
  bool hook_published_ = false;
  std::atomic<bool> cancel_done_{false};
};

class YieldAwaiter {
 public:
  bool await_ready() const noexcept { return false; }
  template <class P>
  void await_suspend(std::coroutine_handle<P> h) {
    ctx_ = task_context_of(h);
    post_resume(executor_or_current(ctx_), h, refused_);
  }
  void await_resume() const {
    if (refused_) throw_resumption_refused();
    if (ctx_ && ctx_->cancel_requested) throw_cancelled();
  }

 private:
  TaskContext* ctx_ = nullptr;
  bool refused_ = false;
};

class ResumeOnAwaiter {
 public:
  explicit ResumeOnAwaiter(EventExecutor& target) noexcept : target_(&target) {}
  bool await_ready() const noexcept { return false; }
  // Already on the target: record it and continue inline (returning false resumes at once).
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    if (auto* ctx = task_context_of(h)) ctx->executor = target_;
    if (target_->in_event_loop()) return false;
    post_resume(target_, h, refused_);
    return true;
  }
  void await_resume() const {
    if (refused_) throw_resumption_refused();
  }

 private:
  EventExecutor* target_;
  bool refused_ = false;
};

}  // namespace detail

/// Suspends the task for d on its executor's clock (so it obeys virtual time on test loops).
template <class Rep, class Period>
detail::SleepAwaiter sleep_for(std::chrono::duration<Rep, Period> d) noexcept {
  return detail::SleepAwaiter(detail::to_nanos(d));
}

/// Re-queues the task behind the work already queued on its executor.
inline detail::YieldAwaiter yield() noexcept { return {}; }

/// Continues the task on executor (and keeps it there after later co_awaits).
inline detail::ResumeOnAwaiter resume_on(EventExecutor& executor) noexcept {
  return detail::ResumeOnAwaiter(executor);
}

}  // namespace trellis
