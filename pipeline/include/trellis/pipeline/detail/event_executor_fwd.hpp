// The EventExecutor interface: what futures, promises and tasks need of an executor. Its
// templated conveniences (submit, schedule, spawn) are defined in event_executor.hpp, which is the
// header to include.
#pragma once

#include <chrono>
#include <cstdint>
#include <type_traits>

#include <trellis/pipeline/unique_function.hpp>

namespace trellis {

template <class T>
class Future;
template <class T>
class Promise;
template <class T>
class ScheduledFuture;
template <class T>
class Task;

namespace detail {
class ScheduledTaskBase;
}

// An executor runs callables and owns a clock. Event loops, the embedded test loop, the default
// thread pool and the work-stealing pool all implement it.
class EventExecutor {
 public:
  virtual ~EventExecutor() = default;

  // Runs fn later on this executor, in submission order per calling thread. Throws
  // RejectedExecutionError once the executor has shut down.
  virtual void execute(UniqueFunction<void()> fn) = 0;
  // True when the calling thread is (one of) this executor's thread(s).
  virtual bool in_event_loop() const = 0;
  // The executor's clock, in nanoseconds. Every deadline and delay of the framework is computed
  // from it (see AbstractScheduledEventExecutor).
  virtual std::int64_t current_time_nanos() const = 0;
  // The same clock read cheaply, for stamps taken per message that need no precision (idle
  // times, the second of a Date header): it may lag current_time_nanos() by up to a few
  // milliseconds and never runs ahead of it. By default it is current_time_nanos(), so a clock
  // that a test freezes or advances governs both.
  virtual std::int64_t coarse_time_nanos() const { return current_time_nanos(); }
  // The time a new schedule's delay counts from. By default current_time_nanos(); an event loop
  // running a batch of tasks on its own thread reads current_time_nanos() once for the batch
  // and answers that reading (its loop time, as libuv's uv_now()), so scheduling many timers
  // from one task costs one clock read, not one each.
  virtual std::int64_t schedule_time_nanos() const { return current_time_nanos(); }

  // Starts an orderly shutdown: new work is still accepted during the quiet period; once no work
  // ran for quiet_period (or timeout elapsed) the executor cancels its scheduled tasks, stops and
  // completes termination_future(). Netty's defaults are 2 s and 15 s.
  Future<void> shutdown_gracefully(std::chrono::nanoseconds quiet_period = std::chrono::seconds(2),
                                   std::chrono::nanoseconds timeout = std::chrono::seconds(15));
  virtual Future<void> termination_future() = 0;
  virtual bool is_shutting_down() const = 0;
  virtual bool is_terminated() const = 0;

  // Runs fn on this executor; the future completes with its result or exception.
  template <class F>
  auto submit(F&& fn) -> Future<std::invoke_result_t<std::decay_t<F>&>>;

  // Runs fn once after delay (measured on current_time_nanos()).
  template <class Rep, class Period, class F>
  auto schedule(std::chrono::duration<Rep, Period> delay, F&& fn)
      -> ScheduledFuture<std::invoke_result_t<std::decay_t<F>&>>;

  // Runs fn at initial_delay, initial_delay + period, initial_delay + 2 * period, ... If the clock
  // jumps N periods at once, fn runs N times in a row to catch up (as in Netty and Java).
  template <class R1, class P1, class R2, class P2, class F>
  ScheduledFuture<void> schedule_at_fixed_rate(std::chrono::duration<R1, P1> initial_delay,
                                               std::chrono::duration<R2, P2> period, F&& fn);

  // Runs fn at initial_delay, then delay after each run ends. A clock jump of N delays makes it
  // run once, not N times.
  template <class R1, class P1, class R2, class P2, class F>
  ScheduledFuture<void> schedule_with_fixed_delay(std::chrono::duration<R1, P1> initial_delay,
                                                  std::chrono::duration<R2, P2> delay, F&& fn);

  // Starts task on this executor. After every co_await the task continues on this executor
  // (until it co_awaits resume_on(other)). The future completes with the task's result.
  template <class T>
  Future<T> spawn(Task<T> task);

  // Scheduling primitives behind schedule*(): the queue takes over one reference of task.
  // Callable from any thread.
  virtual void schedule_task(detail::ScheduledTaskBase* task) = 0;
  virtual void cancel_scheduled_task(detail::ScheduledTaskBase* task) = 0;

 protected:
  virtual Future<void> do_shutdown_gracefully(std::chrono::nanoseconds quiet_period,
                                              std::chrono::nanoseconds timeout) = 0;
};

// The executor whose thread is running the calling code (a loop, a pool worker), or nullptr.
EventExecutor* current_executor() noexcept;

namespace detail {
// The single-threaded loop that owns the calling thread for its whole life (set by EventLoop on
// its thread), or nullptr. Constant-initialised: read without a TLS guard call.
inline thread_local constinit const EventExecutor* t_owning_loop = nullptr;

// executor.in_event_loop(), without the virtual call on a loop's own thread: the pipeline asks
// it before every operation.
inline bool in_executor(const EventExecutor& executor) {
  return t_owning_loop == &executor || executor.in_event_loop();
}

// Set by executors around the work they run, so current_executor() answers correctly.
class CurrentExecutorScope {
 public:
  explicit CurrentExecutorScope(EventExecutor* executor) noexcept;
  ~CurrentExecutorScope();
  CurrentExecutorScope(const CurrentExecutorScope&) = delete;
  CurrentExecutorScope& operator=(const CurrentExecutorScope&) = delete;

 private:
  EventExecutor* previous_;
};
}  // namespace detail

}  // namespace trellis
