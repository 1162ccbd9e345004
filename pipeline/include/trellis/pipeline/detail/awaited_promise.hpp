// Awaitable outbound operations that allocate nothing: the operation's ChannelPromise shares a
// completion state embedded in the awaiter, and the task resumes once the pipeline let go of it.
#pragma once

#include <atomic>
#include <coroutine>
#include <exception>
#include <utility>

#include <trellis/pipeline/awaitables.hpp>
#include <trellis/pipeline/channel_promise.hpp>
#include <trellis/pipeline/message.hpp>

namespace trellis::detail {

class AwaitedOperation;

// A promise state that lives inside an awaiter instead of on the heap. The awaiter must outlive
// every reference to it, so the awaiting task is resumed from destroy() (the last ChannelPromise
// copy went away), not from the completion: the outbound buffer completes a promise and releases
// it a moment later, and a task resumed in between could end the awaiter under it.
class AwaitedPromiseState final : public FutureState<void> {
 public:
  AwaitedPromiseState(AwaitedOperation& op, EventExecutor* executor) noexcept
      : FutureState<void>(executor), op_(&op) {}
  ~AwaitedPromiseState() override = default;

  // The promise to hand to the operation (it takes the state's one reference); call once.
  ChannelPromise take_promise() noexcept { return ChannelPromise::adopt(this); }
  // Throws the operation's failure, or IllegalStateError when its promise was released without
  // being completed (a handler dropped the write).
  void rethrow_if_failed_or_dropped() const;

 private:
  void destroy() noexcept override;

  AwaitedOperation* op_;
};

// The resumption protocol of awaiters whose operations complete through AwaitedPromiseStates:
// begin() before issuing the operations, finish_issuing() after. Whichever of "the issuer is done"
// and "the last state was released" comes second resumes the task (or, when the release came
// first, the task does not suspend at all). Releases may come from any thread.
class AwaitedOperation {
 public:
  AwaitedOperation() noexcept = default;
  AwaitedOperation(const AwaitedOperation&) = delete;
  AwaitedOperation& operator=(const AwaitedOperation&) = delete;

 protected:
  ~AwaitedOperation() = default;

  void begin(std::coroutine_handle<> h, EventExecutor* executor, int states) noexcept {
    handle_ = h;
    executor_ = executor;
    outstanding_.store(states, std::memory_order_relaxed);
    phase_.store(kIssuing, std::memory_order_release);
  }
  // True: the task stays suspended and is resumed by the last release. False: everything was
  // released already; the caller continues (or resumes) the task itself.
  bool finish_issuing() noexcept {
    int expected = kIssuing;
    return phase_.compare_exchange_strong(expected, kSuspended, std::memory_order_acq_rel);
  }
  // For an issuer that runs while the task is already suspended (after a wait for writability).
  void finish_issuing_suspended() noexcept {
    if (!finish_issuing()) resume_task();
  }
  // Resumes the task on its executor; if that refuses, check_resumed() throws.
  void resume_task() noexcept { resume_on_executor(executor_, handle_, refused_); }
  void check_resumed() const {
    if (refused_) [[unlikely]]
      throw_resumption_refused();
  }
  std::coroutine_handle<> handle() const noexcept { return handle_; }
  EventExecutor* executor() const noexcept { return executor_; }

 private:
  friend class AwaitedPromiseState;
  enum : int { kIssuing, kSuspended, kReleased };

  void state_released() noexcept {
    if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (phase_.exchange(kReleased, std::memory_order_acq_rel) == kSuspended) resume_task();
  }

  std::coroutine_handle<> handle_;
  EventExecutor* executor_ = nullptr;
  std::atomic<int> outstanding_{0};
  std::atomic<int> phase_{kIssuing};
  bool refused_ = false;
};

inline void AwaitedPromiseState::destroy() noexcept { op_->state_released(); }

inline void AwaitedPromiseState::rethrow_if_failed_or_dropped() const {
  if (!is_done()) {
    throw IllegalStateError("the write's promise was released without being completed");
  }
  rethrow_if_failed();
}

// co_await target.write_async(msg) / write_and_flush_async(msg): writes through target (a
// ChannelHandlerContext or a Channel) and completes when the write did, rethrowing its failure.
// A cancellation point before the write is issued; once issued it waits for the write (a closing
// channel fails it, so that wait is bounded by the channel's life).
template <class Target>
class WriteAwaiter final : private AwaitedOperation {
 public:
  WriteAwaiter(Target& target, Message&& msg, bool flush, EventExecutor* executor) noexcept
      : target_(&target), msg_(std::move(msg)), flush_(flush), state_(*this, executor) {}

  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    if (TaskContext* tc = task_context_of(h); tc != nullptr && tc->cancel_requested) {
      cancelled_ = true;
      return false;
    }
    begin(h, awaiting_executor(h), 1);
    target_->write(std::move(msg_), state_.take_promise());
    if (flush_) {
      try {
        target_->flush();
      } catch (...) {
        // The write is queued (its promise is held): wait for it all the same.
        flush_error_ = std::current_exception();
      }
    }
    return finish_issuing();
  }
  void await_resume() const {
    if (cancelled_) throw_cancelled();
    check_resumed();
    state_.rethrow_if_failed_or_dropped();
    if (flush_error_) std::rethrow_exception(flush_error_);
  }

 private:
  Target* target_;
  Message msg_;
  bool flush_;
  bool cancelled_ = false;
  std::exception_ptr flush_error_;
  AwaitedPromiseState state_;
};

}  // namespace trellis::detail
