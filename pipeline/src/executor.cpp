// The current-executor thread-local, task cancellation and the task suspension points.
#include <thread>

#include <trellis/pipeline/awaitables.hpp>
#include <trellis/pipeline/detail/thread_role.hpp>

namespace trellis {

namespace {
thread_local EventExecutor* t_current_executor = nullptr;
}

EventExecutor* current_executor() noexcept { return t_current_executor; }

namespace detail {

CurrentExecutorScope::CurrentExecutorScope(EventExecutor* executor) noexcept
    : previous_(t_current_executor) {
  t_current_executor = executor;
}
CurrentExecutorScope::~CurrentExecutorScope() { t_current_executor = previous_; }

void request_task_cancel(TaskContext* context, StateBase* keep_alive) noexcept {
  keep_alive->add_ref();
  run_on(context->executor, [context, keep_alive] {
    context->cancel_requested.store(true, std::memory_order_seq_cst);
    if (auto* hook = context->cancel_hook.exchange(nullptr, std::memory_order_seq_cst)) {
      hook->on_cancel();
    }
    keep_alive->release();
  });
}

void post_resume(EventExecutor* executor, std::coroutine_handle<> h, bool& refused) {
  if (t_thread_role.role == ThreadRole::kBlocker) {
    // Posted later, when await_suspend has returned: a refusal then fails the await instead.
    UniqueFunction<void()> post([executor, h, r = &refused] { post_to_executor(executor, h, *r); });
    if (defer_until_idle(post)) return;
  }
  executor->execute([h] { h.resume(); });
}

EventExecutor* executor_or_current(TaskContext* ctx) {
  if (ctx && ctx->executor) return ctx->executor;
  if (auto* ex = current_executor()) return ex;
  throw IllegalStateError("no executor: await this only from a task spawned on an executor");
}

void throw_cancelled() { throw CancelledError(); }

bool SleepAwaiter::suspend(EventExecutor* ex, std::coroutine_handle<> h) {
  handle_ = h;
  executor_ = ex;
  auto* task =
      new ScheduledTask<void>(ex, deadline_after(ex->current_time_nanos(), nanos_), 0, [] {});
  timer_ = StateRef<FutureState<void>>(task, true);  // ours; the queue keeps the one from new
  // Throws when the executor is shut down (the task's future then fails with it). It may fire
  // at once on another thread: nothing resumes before the node is added below.
  ex->schedule_task(task);
  invoke = &on_timer_done;
  if (ctx_) {
    // Published before the node is added: once the node is in, the awaiter may be resumed (and
    // its hook released) at any moment. A cancellation requested before the hook was visible
    // found none: take it back and cancel the timer ourselves.
    hook_published_ = true;
    ctx_->cancel_hook.store(this, std::memory_order_seq_cst);
    if (ctx_->cancel_requested.load(std::memory_order_seq_cst) &&
        ctx_->cancel_hook.exchange(nullptr, std::memory_order_seq_cst) == this) {
      hook_published_ = false;
      timer_->cancel();
    }
  }
  if (timer_->add_completion(this)) return true;
  // Already complete (fired, or cancelled): no node will run, continue now.
  cancelled_ = timer_->is_cancelled();
  return false;
}

void SleepAwaiter::release_hook() noexcept {
  hook_published_ = false;
  if (ctx_->cancel_hook.exchange(nullptr, std::memory_order_seq_cst) == this) return;
  // A cancellation took the hook and may still be in on_cancel: wait until it let go of us.
  while (!cancel_done_.load(std::memory_order_acquire)) std::this_thread::yield();
}

void SleepAwaiter::on_cancel() noexcept {
  // The hook was taken, so the awaiter lives until cancel_done_ is set; after that only the
  // copy of the timer is touched (cancelling it may resume, and end, the task inline).
  StateRef<FutureState<void>> timer = timer_;
  cancel_done_.store(true, std::memory_order_release);
  timer->cancel();
}

void SleepAwaiter::on_timer_done(CompletionNode* self, StateBase& state) noexcept {
  auto* a = static_cast<SleepAwaiter*>(self);
  a->cancelled_ = state.is_cancelled();  // by the task's cancellation or the executor's shutdown
  resume_on_executor(a->executor_, a->handle_, a->refused_);
}

}  // namespace detail
}  // namespace trellis
