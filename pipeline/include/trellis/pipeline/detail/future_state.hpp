// The shared state behind Future<T> and Promise<T>: an intrusively reference-counted, lock-free
// status word, the result, and an intrusive FIFO list of completion callbacks.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include <trellis/pipeline/detail/event_executor_fwd.hpp>
#include <trellis/pipeline/detail/pooled_alloc.hpp>
#include <trellis/pipeline/error.hpp>

namespace trellis::detail {

class StateBase;

// A completion callback embedded in whatever waits (a coroutine awaiter, a listener box): adding
// one allocates nothing. invoke runs once, on the thread that completes the state.
struct CompletionNode {
  CompletionNode* next = nullptr;
  void (*invoke)(CompletionNode* self, StateBase& state) = nullptr;
};

enum class FutureStatus : std::uint32_t {
  kPending = 0,
  kCompleting = 1,
  kSuccess,
  kFailure,
  kCancelled
};

// States (and the classes made from them: spawned tasks' states) are made and dropped per
// operation: their memory comes from the thread's node caches, by size (PooledNew).
class StateBase : public PooledNew {
 public:
  explicit StateBase(EventExecutor* executor) noexcept : executor_(executor) {}
  StateBase(const StateBase&) = delete;
  StateBase& operator=(const StateBase&) = delete;

  void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  // add_ref() for a state no other thread can see yet: a plain store, no atomic increment.
  void add_ref_unpublished() noexcept {
    refs_.store(refs_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void release() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy();
  }
  std::uint32_t use_count() const noexcept { return refs_.load(std::memory_order_acquire); }

  EventExecutor* executor() const noexcept { return executor_; }
  FutureStatus status() const noexcept { return status_.load(std::memory_order_acquire); }
  bool is_done() const noexcept { return status() >= FutureStatus::kSuccess; }
  bool is_success() const noexcept { return status() == FutureStatus::kSuccess; }
  bool is_cancelled() const noexcept { return status() == FutureStatus::kCancelled; }
  // The failure (a CancelledError for a cancelled state), or nullptr while pending or on success.
  std::exception_ptr cause() const noexcept {
    auto s = status();
    if (s == FutureStatus::kCancelled) return cancelled_error();
    return s == FutureStatus::kFailure ? error_ : nullptr;
  }
  // The one CancelledError every cancelled state reports (as Netty does). A cancellation stores
  // nothing in the state: copying one shared exception_ptr into every cancelled state made its
  // reference count bounce between the thread cancelling and the loop dropping the states.
  static const std::exception_ptr& cancelled_error() noexcept;

  // Claims the right to complete: true once, for the first caller.
  bool try_begin_completion() noexcept {
    auto expected = FutureStatus::kPending;
    return status_.compare_exchange_strong(expected, FutureStatus::kCompleting,
                                           std::memory_order_acq_rel);
  }
  bool try_fail(std::exception_ptr error) noexcept {
    if (!try_begin_completion()) return false;
    error_ = std::move(error);
    finish_completion(FutureStatus::kFailure);
    return true;
  }
  // Cancels a pending state; the subclass hook on_cancelled() then stops the underlying work.
  bool cancel() noexcept;
  // Publishes the result written after try_begin_completion() and runs the callbacks.
  void finish_completion(FutureStatus final_status) noexcept;

  // Appends a callback; returns false (and does not add it) when the state is already done.
  bool add_completion(CompletionNode* node) noexcept;

  // Blocks until done. Throws BlockingOperationError when called on the owning executor's thread
  // while pending (it would deadlock).
  void wait() const;
  // Blocks until done or until timeout; returns is_done().
  bool wait_for(std::chrono::nanoseconds timeout) const;
  // Throws the failure (CancelledError when cancelled).
  void rethrow_if_failed() const;

 protected:
  virtual ~StateBase() = default;
  virtual void destroy() noexcept { delete this; }
  virtual void on_cancelled() noexcept {}
  void check_not_blocking_own_loop() const;

  std::exception_ptr error_;

 private:
  std::atomic<std::uint32_t> refs_{1};
  std::atomic<FutureStatus> status_{FutureStatus::kPending};
  std::atomic<bool> list_lock_{false};
  mutable std::atomic<std::uint32_t> waiters_{0};
  CompletionNode* head_ = nullptr;
  CompletionNode* tail_ = nullptr;
  EventExecutor* executor_;
};

// The result part, typed.
template <class T>
class FutureState : public StateBase {
 public:
  using StateBase::StateBase;

  template <class... Args>
  bool try_set_value(Args&&... args) {
    if (!try_begin_completion()) return false;
    complete_claimed(std::forward<Args>(args)...);
    return true;
  }
  // Stores the value and publishes it; the caller has won try_begin_completion().
  template <class... Args>
  void complete_claimed(Args&&... args) noexcept {
    try {
      ::new (static_cast<void*>(&storage_)) T(std::forward<Args>(args)...);
    } catch (...) {
      error_ = std::current_exception();
      finish_completion(FutureStatus::kFailure);
      return;
    }
    has_value_ = true;
    finish_completion(FutureStatus::kSuccess);
  }
  T& value() noexcept { return *std::launder(reinterpret_cast<T*>(&storage_)); }

 protected:
  ~FutureState() override {
    if (has_value_) value().~T();
  }

 private:
  alignas(T) unsigned char storage_[sizeof(T)];
  bool has_value_ = false;
};

template <>
class FutureState<void> : public StateBase {
 public:
  using StateBase::StateBase;
  bool try_set_value() noexcept {
    if (!try_begin_completion()) return false;
    complete_claimed();
    return true;
  }
  void complete_claimed() noexcept { finish_completion(FutureStatus::kSuccess); }
};

// An owning pointer to a state (one reference).
template <class S>
class StateRef {
 public:
  StateRef() noexcept = default;
  explicit StateRef(S* s, bool add_ref = false) noexcept : s_(s) {
    if (s_ && add_ref) s_->add_ref();
  }
  StateRef(const StateRef& o) noexcept : s_(o.s_) {
    if (s_) s_->add_ref();
  }
  StateRef(StateRef&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  StateRef& operator=(StateRef o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  ~StateRef() {
    if (s_) s_->release();
  }
  S* get() const noexcept { return s_; }
  S* operator->() const noexcept { return s_; }
  S* release() noexcept { return std::exchange(s_, nullptr); }
  explicit operator bool() const noexcept { return s_ != nullptr; }

 private:
  S* s_ = nullptr;
};

// Runs fn on executor: inline when already on it (or when executor is null), else posted.
// A rejected post (executor shut down) is logged and fn runs inline, so nothing is lost.
void run_on(EventExecutor* executor, UniqueFunction<void()> fn) noexcept;

}  // namespace trellis::detail
