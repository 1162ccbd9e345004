// EventExecutor: the executor interface (see detail/event_executor_fwd.hpp for the virtual part)
// and its templated conveniences: submit, schedule, schedule_at_fixed_rate,
// schedule_with_fixed_delay and spawn.
#pragma once

#include <chrono>
#include <type_traits>
#include <utility>

#include <trellis/pipeline/detail/event_executor_fwd.hpp>
#include <trellis/pipeline/future.hpp>
#include <trellis/pipeline/promise.hpp>
#include <trellis/pipeline/scheduled_future.hpp>
#include <trellis/pipeline/task.hpp>

namespace trellis {

namespace detail {
template <class Rep, class Period>
constexpr std::int64_t to_nanos(std::chrono::duration<Rep, Period> d) noexcept {
  // Round up so a task never runs before the delay it asked for.
  return std::chrono::ceil<std::chrono::nanoseconds>(d).count();
}

// fn goes straight into the task node: no intermediate UniqueFunction to build and move.
template <class R, class F>
ScheduledFuture<R> schedule_on(EventExecutor* ex, std::int64_t delay, std::int64_t period, F&& fn) {
  auto deadline = deadline_after(ex->schedule_time_nanos(), delay);
  auto* task = new ScheduledTask<R>(ex, deadline, period, std::forward<F>(fn));
  task->add_ref_unpublished();  // the future's reference
  ScheduledFuture<R> future(task, kAdoptRef);
  ex->schedule_task(task);  // the queue's reference (the one from new)
  return future;
}
}  // namespace detail

// The definitions of EventExecutor's templated members (declared and documented in
// detail/event_executor_fwd.hpp); Doxygen skips them.
/// @cond
inline Future<void> EventExecutor::shutdown_gracefully(std::chrono::nanoseconds quiet_period,
                                                       std::chrono::nanoseconds timeout) {
  return do_shutdown_gracefully(quiet_period, timeout);
}

template <class F>
auto EventExecutor::submit(F&& fn) -> Future<std::invoke_result_t<std::decay_t<F>&>> {
  using R = std::invoke_result_t<std::decay_t<F>&>;
  Promise<R> promise(this);
  auto future = promise.future();
  execute([p = std::move(promise), f = std::decay_t<F>(std::forward<F>(fn))]() mutable {
    try {
      if constexpr (std::is_void_v<R>) {
        f();
        p.try_set_value();
      } else {
        p.try_set_value(f());
      }
    } catch (...) {
      p.try_set_exception(std::current_exception());
    }
  });
  return future;
}

template <class Rep, class Period, class F>
auto EventExecutor::schedule(std::chrono::duration<Rep, Period> delay, F&& fn)
    -> ScheduledFuture<std::invoke_result_t<std::decay_t<F>&>> {
  using R = std::invoke_result_t<std::decay_t<F>&>;
  return detail::schedule_on<R>(this, detail::to_nanos(delay), 0, std::forward<F>(fn));
}

template <class R1, class P1, class R2, class P2, class F>
ScheduledFuture<void> EventExecutor::schedule_at_fixed_rate(
    std::chrono::duration<R1, P1> initial_delay, std::chrono::duration<R2, P2> period, F&& fn) {
  auto p = detail::to_nanos(period);
  if (p <= 0) throw InvalidArgumentError("schedule_at_fixed_rate: period must be positive");
  return detail::schedule_on<void>(this, detail::to_nanos(initial_delay), p, std::forward<F>(fn));
}

template <class R1, class P1, class R2, class P2, class F>
ScheduledFuture<void> EventExecutor::schedule_with_fixed_delay(
    std::chrono::duration<R1, P1> initial_delay, std::chrono::duration<R2, P2> delay, F&& fn) {
  auto d = detail::to_nanos(delay);
  if (d <= 0) throw InvalidArgumentError("schedule_with_fixed_delay: delay must be positive");
  return detail::schedule_on<void>(this, detail::to_nanos(initial_delay), -d, std::forward<F>(fn));
}

template <class T>
Future<T> EventExecutor::spawn(Task<T> task) {
  if (!task.valid()) throw InvalidArgumentError("spawn: empty task");
  auto* state = new detail::SpawnState<T>(this, task.release());
  Future<T> future(detail::StateRef<detail::FutureState<T>>(state, true));
  // The reference from new belongs to the running task.
  try {
    execute([state] { state->start(); });
  } catch (...) {
    state->try_fail(std::current_exception());
    state->start();  // cancelled/failed before running: frees the frame
  }
  return future;
}
/// @endcond

}  // namespace trellis
