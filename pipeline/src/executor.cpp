// The current-executor thread-local, task cancellation and the task suspension points.
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
    context->cancel_requested = true;
    if (auto* hook = std::exchange(context->cancel_hook, nullptr)) hook->on_cancel();
    keep_alive->release();
  });
}

void post_resume(EventExecutor* executor, std::coroutine_handle<> h) {
  if (t_thread_role.role == ThreadRole::kBlocker) {
    UniqueFunction<void()> post([executor, h] { executor->execute([h] { h.resume(); }); });
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

void SleepAwaiter::suspend(EventExecutor* ex, std::coroutine_handle<> h) {
  handle_ = h;
  if (ctx_) ctx_->cancel_hook = this;
  // The future is in place before the task is queued: on a multi-threaded executor the timer
  // may resume (and end) the task before schedule_task() returns.
  auto* task = new ScheduledTask<void>(ex, deadline_after(ex->current_time_nanos(), nanos_), 0,
                                       [h] { h.resume(); });
  timer_ = ScheduledFuture<void>(task);
  ex->schedule_task(task);
}

void SleepAwaiter::on_cancel() noexcept {
  // Runs on the task's executor, as does the timer: either the timer is still queued (cancel
  // wins and we resume here) or it already resumed the task and cleared the hook.
  if (timer_.cancel()) {
    cancelled_ = true;
    handle_.resume();
  }
}

}  // namespace detail
}  // namespace trellis
