// ChannelPromise: the optional promise of an outbound operation (write, flush, close, ...). An
// empty ("void") ChannelPromise is one null pointer: passing no promise allocates nothing and
// completing it does nothing.
#pragma once

#include <exception>
#include <utility>

#include <trellis/pipeline/promise.hpp>

namespace trellis {

/// The optional promise of an outbound operation (write, flush, close, ...). An empty ("void")
/// ChannelPromise is one null pointer: passing no promise allocates nothing and completing it
/// does nothing. Copies share one result; any thread may complete it.
class ChannelPromise {
 public:
  /// The void promise: completions are dropped.
  ChannelPromise() noexcept = default;
  /// Shares `p`'s state: completing this completes `p`'s future.
  ChannelPromise(const Promise<void>& p) noexcept  // NOLINT(google-explicit-constructor)
      : state_(p.future().state(), true) {}
  /// A fresh promise whose listeners run on `executor`.
  static ChannelPromise make(EventExecutor* executor) {
    ChannelPromise p;
    p.state_ = detail::StateRef<detail::FutureState<void>>(new detail::FutureState<void>(executor));
    return p;
  }
  /// Internal: takes over the one reference of `state` (a state embedded in an awaiter):
  /// nothing is allocated.
  static ChannelPromise adopt(detail::FutureState<void>* state) noexcept {
    ChannelPromise p;
    p.state_ = detail::StateRef<detail::FutureState<void>>(state);
    return p;
  }

  /// True for the void promise.
  bool is_void() const noexcept { return !state_; }
  /// True once completed (always false for the void promise).
  bool is_done() const noexcept { return state_ && state_->is_done(); }
  /// True once completed successfully (always false for the void promise).
  bool is_success() const noexcept { return state_ && state_->is_success(); }
  /// The failure, or nullptr.
  std::exception_ptr cause() const noexcept { return state_ ? state_->cause() : nullptr; }
  /// The future of a non-void promise; throws IllegalStateError for the void promise.
  Future<void> future() const {
    if (!state_) throw IllegalStateError("the void ChannelPromise has no future");
    return Future<void>(state_);
  }

  /// Completes the promise successfully (false when it was already complete, or is the void
  /// promise).
  bool try_set_value() noexcept { return state_ && state_->try_set_value(); }
  /// Fails the promise with `error` (false when already complete, or the void promise).
  bool try_set_exception(std::exception_ptr error) noexcept {
    return state_ && state_->try_fail(std::move(error));
  }
  /// Fails the promise with the exception object `error` (false when already complete, or the
  /// void promise).
  template <class E>
  bool try_set_exception(E error) noexcept {
    return state_ && state_->try_fail(std::make_exception_ptr(std::move(error)));
  }

 private:
  detail::StateRef<detail::FutureState<void>> state_;
};

}  // namespace trellis
