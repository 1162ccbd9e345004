// Task<T>: a lazy coroutine with symmetric transfer. A task runs when awaited by another task or
// when spawned on an executor (EventExecutor::spawn); the spawned task and every task it awaits
// share one TaskContext that knows the executor to resume on and whether cancellation was asked.
#pragma once

#include <atomic>
#include <coroutine>
#include <exception>
#include <type_traits>
#include <utility>
#include <variant>

#include <trellis/pipeline/detail/pooled_alloc.hpp>
#include <trellis/pipeline/detail/thread_role.hpp>
#include <trellis/pipeline/future.hpp>

namespace trellis {

namespace detail {

// A suspension that cancellation can interrupt (a sleep, a yield).
class CancelHook {
 public:
  virtual void on_cancel() noexcept = 0;

 protected:
  ~CancelHook() = default;
};

// Shared by a spawned task and all tasks it awaits; touched only on the task's executor.
struct TaskContext {
  EventExecutor* executor = nullptr;
  // Set by a cancellation (on the task's executor: on a pool, maybe another thread than the one
  // the task runs on), read at the task's cancellation points.
  std::atomic<bool> cancel_requested{false};
  // The suspension point the task waits at, if it can be interrupted; taken (exchanged for
  // nullptr) by whoever interrupts it or by the point itself when it resumes.
  std::atomic<CancelHook*> cancel_hook{nullptr};
};

// Coroutine frames come from the thread's node caches, by size (PooledNew, up to 4 KiB): a task
// awaited per request (a client call, a handler step) allocates nothing in steady state.
class TaskPromiseBase : public PooledNew {
 public:
  std::suspend_always initial_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { error_ = std::current_exception(); }

  EventExecutor* executor() const noexcept { return context_ ? context_->executor : nullptr; }
  TaskContext* context() const noexcept { return context_; }
  void set_context(TaskContext* c) noexcept { context_ = c; }
  void set_continuation(std::coroutine_handle<> c) noexcept { continuation_ = c; }
  std::coroutine_handle<> continuation() const noexcept { return continuation_; }

 protected:
  std::coroutine_handle<> continuation_;
  TaskContext* context_ = nullptr;
  std::exception_ptr error_;
};

template <class T>
class SpawnState;

template <class T>
class TaskPromise;

// At the end of a task: continue the awaiting task (symmetric transfer), or, for a spawned task,
// complete its future and free the frame.
template <class T>
struct TaskFinalAwaiter {
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<TaskPromise<T>> h) noexcept;
  void await_resume() const noexcept {}
};

template <class T>
class TaskPromise : public TaskPromiseBase {
 public:
  Task<T> get_return_object() noexcept;
  TaskFinalAwaiter<T> final_suspend() noexcept { return {}; }
  template <class V>
  void return_value(V&& v) {
    value_.template emplace<1>(std::forward<V>(v));
  }
  T take_result() {
    if (error_) std::rethrow_exception(error_);
    return std::move(std::get<1>(value_));
  }
  bool failed() const noexcept { return static_cast<bool>(error_); }
  std::exception_ptr error() const noexcept { return error_; }

 private:
  std::variant<std::monostate, T> value_;
};

template <>
class TaskPromise<void> : public TaskPromiseBase {
 public:
  Task<void> get_return_object() noexcept;
  TaskFinalAwaiter<void> final_suspend() noexcept { return {}; }
  void return_void() noexcept {}
  void take_result() {
    if (error_) std::rethrow_exception(error_);
  }
  bool failed() const noexcept { return static_cast<bool>(error_); }
  std::exception_ptr error() const noexcept { return error_; }
};

}  // namespace detail

/// A lazy coroutine returning `T`: it runs when awaited by another task (which resumes when it
/// ends, by symmetric transfer) or when spawned on an executor (EventExecutor::spawn,
/// ChannelHandlerContext::spawn), whose Future then carries its result. A spawned task and the
/// tasks it awaits run on the spawning executor, resumed there after each `co_await`. A task is
/// move-only and owns its coroutine frame until it runs. Errors: an exception escaping the body
/// is rethrown to the awaiting task (or fails the spawned future); a cancelled task gets
/// CancelledError at its next cancellation point (sleep_for, yield, channel reads and writes).
template <class T = void>
class [[nodiscard]] Task {
 public:
  /// The coroutine promise type (for the compiler).
  using promise_type = detail::TaskPromise<T>;
  /// The coroutine handle type.
  using handle_type = std::coroutine_handle<promise_type>;
  /// The result type.
  using value_type = T;

  /// An empty task (valid() is false).
  Task() noexcept = default;
  /// Internal: owns the coroutine `h` (made by the promise type).
  explicit Task(handle_type h) noexcept : handle_(h) {}
  /// Takes `o`'s coroutine; `o` becomes empty.
  Task(Task&& o) noexcept : handle_(std::exchange(o.handle_, {})) {}
  /// Destroys the owned coroutine (if any) and takes `o`'s.
  Task& operator=(Task&& o) noexcept {
    if (this != &o) {
      if (handle_) handle_.destroy();
      handle_ = std::exchange(o.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() {
    if (handle_) handle_.destroy();
  }

  /// True when the task owns a coroutine.
  bool valid() const noexcept { return static_cast<bool>(handle_); }
  /// Gives up ownership of the coroutine frame.
  handle_type release() noexcept { return std::exchange(handle_, {}); }

  /// Internal: what `co_await task` uses.
  struct Awaiter {
    /// The awaited task's coroutine.
    handle_type child;
    /// True when there is nothing to run.
    bool await_ready() const noexcept { return !child || child.done(); }
    /// Runs the child, which resumes the parent when it ends.
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> parent) noexcept {
      child.promise().set_continuation(parent);
      if constexpr (requires { parent.promise().context(); }) {
        child.promise().set_context(parent.promise().context());
      }
      return child;
    }
    /// The child's result, or its exception rethrown.
    T await_resume() { return child.promise().take_result(); }
  };
  /// `co_await std::move(task)`: runs the task in the awaiting one and returns its result.
  Awaiter operator co_await() && noexcept { return Awaiter{handle_}; }
  /// `co_await task`: as above; the task keeps its (finished) frame.
  Awaiter operator co_await() & noexcept { return Awaiter{handle_}; }

 private:
  handle_type handle_;
};

namespace detail {

template <class T>
Task<T> TaskPromise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<TaskPromise<T>>::from_promise(*this));
}
inline Task<void> TaskPromise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<TaskPromise<void>>::from_promise(*this));
}

// The future state of a spawned task; it is also the task's context. One reference is held by
// the running task and released when the frame ends.
template <class T>
class SpawnState final : public FutureState<T>, public TaskContext {
 public:
  SpawnState(EventExecutor* executor, std::coroutine_handle<TaskPromise<T>> h) noexcept
      : FutureState<T>(executor), handle_(h) {
    this->TaskContext::executor = executor;
    h.promise().set_context(this);
  }

  // Runs on the executor: starts the task unless it was cancelled (or failed) before it ran.
  void start() noexcept {
    if (this->is_done()) {
      finish_frame();
      return;
    }
    handle_.resume();
  }
  // Called by the final awaiter of the root task.
  void complete_from(TaskPromise<T>& p) noexcept {
    if (p.failed()) {
      this->try_fail(p.error());
    } else if (this->try_begin_completion()) {
      if constexpr (std::is_void_v<T>) {
        this->complete_claimed();
      } else {
        this->complete_claimed(p.take_result());
      }
    }
    finish_frame();
  }

 private:
  void finish_frame() noexcept {
    handle_.destroy();
    this->release();
  }
  void on_cancelled() noexcept override;

  std::coroutine_handle<TaskPromise<T>> handle_;
};

template <class T>
std::coroutine_handle<> TaskFinalAwaiter<T>::await_suspend(
    std::coroutine_handle<TaskPromise<T>> h) noexcept {
  auto& p = h.promise();
  if (auto c = p.continuation()) return c;
  auto* state = static_cast<SpawnState<T>*>(p.context());
  if (t_thread_role.role == ThreadRole::kBlocker) {
    // A task that ran in place on a blocker thread: publish its end once the thread is back in
    // its cache, so whoever waits for it can reuse the thread.
    UniqueFunction<void()> complete([state, &p] { state->complete_from(p); });
    if (defer_until_idle(complete)) return std::noop_coroutine();
  }
  state->complete_from(p);
  return std::noop_coroutine();
}

// Asks the task's executor to interrupt the task's current cancellable suspension.
void request_task_cancel(TaskContext* context, StateBase* keep_alive) noexcept;

template <class T>
void SpawnState<T>::on_cancelled() noexcept {
  request_task_cancel(this, this);
}

}  // namespace detail

}  // namespace trellis
