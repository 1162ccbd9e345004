// Future<T>: the read side of an asynchronous result that belongs to an executor. Listeners run
// on that executor (inline when already on it); co_await on a future resumes the awaiting task on
// its own executor, inline when the future completes there.
#pragma once

#include <chrono>
#include <coroutine>
#include <exception>
#include <type_traits>
#include <utility>

#include <trellis/pipeline/detail/future_state.hpp>

namespace trellis {

template <class T>
class Future;

namespace detail {
// A coroutine promise that knows its executor (Task's) exposes executor(); others resume inline.
template <class P>
EventExecutor* awaiting_executor(std::coroutine_handle<P> h) noexcept {
  if constexpr (requires { h.promise().executor(); }) {
    return h.promise().executor();
  } else {
    return nullptr;
  }
}

// Resumes h on executor (inline when already there). When the executor refuses (shut down),
// sets refused and resumes h here: the awaiter then throws from await_resume (see
// throw_resumption_refused), so the task fails instead of hanging or running on this thread.
void resume_on_executor(EventExecutor* executor, std::coroutine_handle<> h, bool& refused) noexcept;
// The same, but always through executor->execute(), even on the executor's own thread: for a
// post that must not run the task inside its caller (a blocker thread posting what its task
// left, or a worker taking its role back).
void post_to_executor(EventExecutor* executor, std::coroutine_handle<> h, bool& refused) noexcept;
[[noreturn]] void throw_resumption_refused();

template <class T>
class FutureAwaiter : private CompletionNode {
 public:
  explicit FutureAwaiter(Future<T> f) noexcept : future_(std::move(f)) {}
  bool await_ready() const noexcept { return future_.is_done(); }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) noexcept {
    handle_ = h;
    executor_ = awaiting_executor(h);
    invoke = &on_complete;
    // After a successful add the awaiter may be resumed (and destroyed) at any moment.
    return future_.state_->add_completion(this);
  }
  decltype(auto) await_resume() {
    if (refused_) [[unlikely]]
      throw_resumption_refused();
    return std::move(future_).get();
  }

 private:
  static void on_complete(CompletionNode* self, StateBase&) noexcept {
    auto* a = static_cast<FutureAwaiter*>(self);
    resume_on_executor(a->executor_, a->handle_, a->refused_);
  }
  Future<T> future_;
  std::coroutine_handle<> handle_;
  EventExecutor* executor_ = nullptr;
  bool refused_ = false;
};
}  // namespace detail

/// The read side of an asynchronous result that belongs to an executor (made by a Promise, an
/// executor's `submit`/`schedule`/`spawn`, or a channel operation's ChannelPromise). Copies share
/// one result.
///
/// Threading: every member may be called from any thread. Listeners run on the owning executor
/// (inline when already on it); `co_await` resumes the awaiting task on its own executor.
///
/// Errors: get() throws the failure (CancelledError when cancelled); blocking on the owning
/// executor's thread while the future is pending throws BlockingOperationError.
template <class T>
class Future {
 public:
  /// The result type.
  using value_type = T;

  /// An invalid future (valid() is false); only assignment and valid() may be used.
  Future() noexcept = default;
  /// Internal: a future over a shared state (made by Promise and the executors).
  explicit Future(detail::StateRef<detail::FutureState<T>> state) noexcept
      : state_(std::move(state)) {}

  /// True when the future refers to a result (not default-constructed).
  bool valid() const noexcept { return static_cast<bool>(state_); }
  /// True once completed: succeeded, failed or cancelled.
  bool is_done() const noexcept { return state_->is_done(); }
  /// True once completed successfully.
  bool is_success() const noexcept { return state_->is_success(); }
  /// True once cancelled.
  bool is_cancelled() const noexcept { return state_->is_cancelled(); }
  /// The failure, a CancelledError when cancelled, nullptr while pending or after success.
  std::exception_ptr cause() const noexcept { return state_->cause(); }
  /// The executor listeners run on (nullptr: on the completing thread).
  EventExecutor* executor() const noexcept { return state_->executor(); }

  /// Cancels the operation if it has not completed; returns whether this call cancelled it.
  bool cancel() noexcept { return state_->cancel(); }

  /// Blocks until done (not allowed on the owning executor's thread while pending: that throws
  /// BlockingOperationError), then returns the value or throws the failure.
  decltype(auto) get() const& {
    state_->wait();
    state_->rethrow_if_failed();
    if constexpr (!std::is_void_v<T>) return static_cast<const T&>(state_->value());
  }
  /// As get(), moving the value out when this is the only reference to the result.
  T get() && {
    state_->wait();
    state_->rethrow_if_failed();
    if constexpr (!std::is_void_v<T>) {
      if constexpr (std::is_copy_constructible_v<T>) {
        if (state_->use_count() != 1) return state_->value();
      }
      return std::move(state_->value());
    }
  }
  /// Blocks until done (BlockingOperationError on the owning executor's thread while pending).
  void wait() const { state_->wait(); }
  /// Blocks until done or `timeout` elapsed; returns whether it is done.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    return state_->wait_for(std::chrono::duration_cast<std::chrono::nanoseconds>(timeout));
  }

  /// Calls `fn(const Future<T>&)` once the future is done, on the owning executor (inline if done
  /// and already on it). Returns this future.
  template <class F>
  const Future& add_listener(F&& fn) const {
    using Fn = std::decay_t<F>;
    struct Box final : detail::CompletionNode, detail::PooledNew {
      Box(Future f, Fn&& g) : future(std::move(f)), fn(std::move(g)) {}
      Future future;
      Fn fn;
    };
    auto* box = new Box(*this, Fn(std::forward<F>(fn)));
    box->invoke = [](detail::CompletionNode* n, detail::StateBase&) noexcept {
      auto* b = static_cast<Box*>(n);
      detail::run_on(b->future.executor(), [b]() mutable {
        std::unique_ptr<Box> owned(b);
        owned->fn(static_cast<const Future&>(owned->future));
      });
    };
    if (!state_->add_completion(box)) box->invoke(box, *state_.get());
    return *this;
  }

  /// `co_await future`: the value, or the failure thrown; the task resumes on its own executor.
  auto operator co_await() const& noexcept { return detail::FutureAwaiter<T>(*this); }
  /// `co_await std::move(future)`: as above, moving the value out.
  auto operator co_await() && noexcept { return detail::FutureAwaiter<T>(std::move(*this)); }

  /// Internal: the shared state.
  detail::FutureState<T>* state() const noexcept { return state_.get(); }

 private:
  template <class>
  friend class detail::FutureAwaiter;
  detail::StateRef<detail::FutureState<T>> state_;
};

}  // namespace trellis
