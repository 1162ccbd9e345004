// Completion, callbacks and blocking waits of future states (see detail/future_state.hpp).
#include <trellis/pipeline/future.hpp>

#include <condition_variable>
#include <mutex>

#include <spdlog/spdlog.h>

namespace trellis::detail {

namespace {
// Blocking waiters park on one of a few shared mutex/condition pairs chosen by the state's
// address, so a state carries no mutex of its own.
struct WaitStripe {
  std::mutex mutex;
  std::condition_variable cv;
};
constexpr std::size_t kStripes = 32;
// Never destroyed: threads that outlive main (the default executor's) may still complete
// futures while static destructors run.
WaitStripe* const g_stripes = new WaitStripe[kStripes];
WaitStripe& stripe_for(const void* p) {
  return g_stripes[(reinterpret_cast<std::uintptr_t>(p) >> 6) % kStripes];
}

class SpinGuard {
 public:
  explicit SpinGuard(std::atomic<bool>& flag) noexcept : flag_(flag) {
    while (flag_.exchange(true, std::memory_order_acquire)) {
      while (flag_.load(std::memory_order_relaxed)) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
    }
  }
  ~SpinGuard() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool>& flag_;
};
}  // namespace

const std::exception_ptr& StateBase::cancelled_error() noexcept {
  static const std::exception_ptr cancelled = std::make_exception_ptr(CancelledError());
  return cancelled;
}

bool StateBase::cancel() noexcept {
  if (!try_begin_completion()) return false;
  // Cancelling allocates nothing and writes no error: cause() answers cancelled_error().
  finish_completion(FutureStatus::kCancelled);
  on_cancelled();
  return true;
}

void StateBase::finish_completion(FutureStatus final_status) noexcept {
  // seq_cst: pairs with waiters_ below and the waiters' increment, and EventLoop's
  // cancel_scheduled_task() orders its taken_in load after this store by it.
  status_.store(final_status, std::memory_order_seq_cst);
  if (waiters_.load(std::memory_order_seq_cst) > 0) {
    auto& s = stripe_for(this);
    { std::lock_guard lock(s.mutex); }
    s.cv.notify_all();
  }
  CompletionNode* node;
  {
    SpinGuard guard(list_lock_);
    node = head_;
    head_ = tail_ = nullptr;
  }
  while (node) {
    CompletionNode* next = node->next;
    node->invoke(node, *this);  // may free node
    node = next;
  }
}

bool StateBase::add_completion(CompletionNode* node) noexcept {
  node->next = nullptr;
  SpinGuard guard(list_lock_);
  if (is_done()) return false;
  if (tail_) {
    tail_->next = node;
  } else {
    head_ = node;
  }
  tail_ = node;
  return true;
}

void StateBase::check_not_blocking_own_loop() const {
  if (executor_ && executor_->in_event_loop()) {
    throw BlockingOperationError(
        "blocking wait on a pending future from the thread of its own executor would deadlock");
  }
}

void StateBase::wait() const {
  if (is_done()) return;
  check_not_blocking_own_loop();
  auto& s = stripe_for(this);
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::unique_lock lock(s.mutex);
    s.cv.wait(lock, [this] { return is_done(); });
  }
  waiters_.fetch_sub(1, std::memory_order_relaxed);
}

bool StateBase::wait_for(std::chrono::nanoseconds timeout) const {
  if (is_done()) return true;
  check_not_blocking_own_loop();
  auto& s = stripe_for(this);
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  bool done;
  {
    std::unique_lock lock(s.mutex);
    done = s.cv.wait_for(lock, timeout, [this] { return is_done(); });
  }
  waiters_.fetch_sub(1, std::memory_order_relaxed);
  return done;
}

void StateBase::rethrow_if_failed() const {
  auto s = status();
  if (s == FutureStatus::kCancelled) std::rethrow_exception(cancelled_error());
  if (s == FutureStatus::kFailure) std::rethrow_exception(error_);
}

void run_on(EventExecutor* executor, UniqueFunction<void()> fn) noexcept {
  if (!executor || executor->in_event_loop()) {
    try {
      fn();
    } catch (const std::exception& e) {
      spdlog::warn("trellis: a future listener threw: {}", e.what());
    } catch (...) {
      spdlog::warn("trellis: a future listener threw a non-standard exception");
    }
    return;
  }
  if (executor->is_terminated()) {
    // Its thread runs nothing any more, so running here cannot race with it.
    run_on(nullptr, std::move(fn));
    return;
  }
  try {
    executor->execute(std::move(fn));
  } catch (const std::exception& e) {
    spdlog::error("trellis: could not post a listener to its executor: {}", e.what());
  }
}

void resume_on_executor(EventExecutor* executor, std::coroutine_handle<> h,
                        bool& refused) noexcept {
  if (!executor || executor->in_event_loop()) {
    h.resume();
    return;
  }
  post_to_executor(executor, h, refused);
}

void post_to_executor(EventExecutor* executor, std::coroutine_handle<> h, bool& refused) noexcept {
  if (!executor->is_terminated()) {
    try {
      executor->execute([h] { h.resume(); });
      return;
    } catch (const std::exception&) {
      // Refused (shut down since the check above, or out of memory): handled below.
    }
  }
  // The executor runs nothing more: resume here, only for the await to throw, so that the task
  // ends (its future fails with RejectedExecutionError) without running on the wrong thread
  // past this point, instead of never resuming and leaving its future pending.
  refused = true;
  h.resume();
}

void throw_resumption_refused() {
  throw RejectedExecutionError("the task's executor is shut down: it cannot resume there");
}

}  // namespace trellis::detail
