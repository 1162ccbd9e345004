// Promise<T>: the write side of a Future<T>. It completes once; a second completion is reported
// (set_* throws IllegalStateError, try_set_* returns false), never undefined behaviour.
#pragma once

#include <exception>
#include <utility>

#include <trellis/pipeline/future.hpp>

namespace trellis {

/// The write side of a Future<T>. It completes once; a second completion is reported (`set_*`
/// throws IllegalStateError, `try_set_*` returns false). Copies share one result. Any thread may
/// complete it; listeners run on the promise's executor.
template <class T>
class Promise {
 public:
  /// A promise whose listeners run on `executor` (nullptr: inline on the completing thread).
  explicit Promise(EventExecutor* executor = nullptr)
      : state_(new detail::FutureState<T>(executor)) {}

  /// The future this promise completes.
  Future<T> future() const noexcept { return Future<T>(state_); }
  /// True once completed (or the future cancelled).
  bool is_done() const noexcept { return state_->is_done(); }
  /// The executor listeners run on (nullptr: the completing thread).
  EventExecutor* executor() const noexcept { return state_->executor(); }

  /// Completes with a value built from `args`; false when already complete.
  template <class... Args>
  bool try_set_value(Args&&... args) {
    return state_->try_set_value(std::forward<Args>(args)...);
  }
  /// Completes with a value built from `args`; IllegalStateError when already complete.
  template <class... Args>
  void set_value(Args&&... args) {
    if (!try_set_value(std::forward<Args>(args)...)) already_complete();
  }
  /// Fails with `error`; false when already complete.
  bool try_set_exception(std::exception_ptr error) noexcept {
    return state_->try_fail(std::move(error));
  }
  /// Fails with the exception object `error`; false when already complete.
  template <class E>
  bool try_set_exception(E error) noexcept {
    return try_set_exception(std::make_exception_ptr(std::move(error)));
  }
  /// Fails with `error`; IllegalStateError when already complete.
  void set_exception(std::exception_ptr error) {
    if (!try_set_exception(std::move(error))) already_complete();
  }
  /// Fails with the exception object `error`; IllegalStateError when already complete.
  template <class E>
  void set_exception(E error) {
    set_exception(std::make_exception_ptr(std::move(error)));
  }

 private:
  [[noreturn]] static void already_complete() {
    throw IllegalStateError("promise already completed");
  }
  detail::StateRef<detail::FutureState<T>> state_;
};

/// A future that is already complete, for APIs that sometimes answer at once.
template <class T, class... Args>
Future<T> make_ready_future(Args&&... args) {
  Promise<T> p;
  p.set_value(std::forward<Args>(args)...);
  return p.future();
}
/// A future that has already failed with `error`.
template <class T>
Future<T> make_failed_future(std::exception_ptr error) {
  Promise<T> p;
  p.set_exception(std::move(error));
  return p.future();
}

}  // namespace trellis
