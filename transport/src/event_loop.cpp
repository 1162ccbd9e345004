// The Asio event loop (see event_loop.hpp).
#include <trellis/transport/event_loop.hpp>

#include <pthread.h>

#include <cstdint>
#include <cstdlib>
#include <limits>

#include <spdlog/spdlog.h>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include <trellis/pipeline/detail/run_logged.hpp>

namespace trellis {

namespace {
constexpr std::int64_t kNoDeadline = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kShutdownCheckNanos = 100'000'000;  // as Netty: re-check every 100 ms
std::atomic<unsigned> g_loop_counter{0};

// The value of a closed inbox (the loop has shut down): never a task's address.
detail::ScheduledTaskBase* inbox_closed() noexcept {
  return reinterpret_cast<detail::ScheduledTaskBase*>(std::uintptr_t{1});
}

// Takes the whole list out of an inbox, closing it if close is set. A closed inbox stays closed
// (only the loop closes it, and producers never push onto the closed mark).
detail::ScheduledTaskBase* take_list(std::atomic<detail::ScheduledTaskBase*>& inbox, bool close) {
  auto* closed = inbox_closed();
  if (inbox.load(std::memory_order_relaxed) == closed) return nullptr;
  return inbox.exchange(close ? closed : nullptr, std::memory_order_acquire);
}

asio::steady_timer::time_point to_time_point(std::int64_t nanos) {
  return asio::steady_timer::time_point(std::chrono::nanoseconds(nanos));
}
}  // namespace

// Kept out of the header so that it does not pull Asio into every user's translation unit.
struct EventLoop::AsioState {
  // Every I/O object of the loop is used on the loop's thread only: no reactor I/O locking.
  AsioState() : io(ASIO_CONCURRENCY_HINT_UNSAFE_IO), timer(io), shutdown_timer(io) {}
  asio::io_context io;
  asio::steady_timer timer;
  asio::steady_timer shutdown_timer;
};

EventLoop::EventLoop(std::string name) : EventLoop(EventLoopOptions{.name = std::move(name)}) {}

EventLoop::EventLoop(EventLoopOptions options)
    : name_(options.name.empty() ? "trellis-el-" + std::to_string(g_loop_counter.fetch_add(1))
                                 : std::move(options.name)),
      manual_clock_(std::move(options.clock)),
      clock_(manual_clock_.get()),
      asio_(std::make_unique<AsioState>()),
      io_(&asio_->io),
      armed_deadline_(kNoDeadline),
      armed_(kNoDeadline),
      termination_(nullptr) {
  incoming_.reserve(64);
  running_.reserve(64);
  if (manual_clock_) {
    // Every advance queues one task that runs what became due (behind the tasks queued before
    // the advance, ahead of those queued after it returns).
    clock_subscription_ = manual_clock_->subscribe([this] {
      try {
        execute([this] { on_clock_advanced(); });
      } catch (const RejectedExecutionError&) {
        // Shut down: nothing runs any more.
      }
    });
  }
  thread_ = std::thread([this] { run(); });
}

EventLoop::~EventLoop() {
  // From here on no advance of the clock reaches the loop.
  if (manual_clock_) manual_clock_->unsubscribe(clock_subscription_);
  if (in_event_loop()) {
    if (exiting_) {
      // The keep-alive released at thread exit: run() has returned.
      thread_.detach();
      return;
    }
    spdlog::critical("trellis: event loop {} destroyed from its own thread", name_);
    std::abort();
  }
  do_shutdown_gracefully(std::chrono::nanoseconds(0), std::chrono::nanoseconds(0));
  if (thread_.joinable()) thread_.join();
}

void EventLoop::keep_alive_until_exit(std::shared_ptr<EventLoop> self) {
  if (in_event_loop()) {
    self_ = std::move(self);
    return;
  }
  execute([this, self = std::move(self)]() mutable { self_ = std::move(self); });
}

bool EventLoop::in_event_loop() const { return detail::t_owning_loop == this; }

bool EventLoop::is_shutting_down() const { return state_.load() >= kShuttingDown; }
bool EventLoop::is_terminated() const { return state_.load() == kTerminated; }

void EventLoop::run() {
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  detail::t_owning_loop = this;
  detail::CurrentExecutorScope scope(this);
  auto guard = asio::make_work_guard(*io_);
  last_activity_ = monotonic_nanos();
  for (;;) {
    try {
      io_->run();
      break;
    } catch (const std::exception& e) {
      spdlog::error("trellis: {}: a handler threw: {}", name_, e.what());
    } catch (...) {
      spdlog::error("trellis: {}: a handler threw a non-standard exception", name_);
    }
  }
  // The guard refers to io_: release it while the loop is certainly alive (the keep-alive below
  // may destroy the loop on this thread).
  guard.reset();
  state_.store(kTerminated);
  // Work queued by the last tasks (listeners of cancelled tasks) still runs, then nothing more.
  run_queued_tasks();
  termination_.try_set_value();
  exiting_ = true;
  {
    // Releasing the keep-alive may destroy *this on this thread: nothing below touches it.
    auto self = std::move(self_);
  }
  detail::t_owning_loop = nullptr;
}

void EventLoop::join() {
  if (in_event_loop()) throw BlockingOperationError("EventLoop::join from the loop's own thread");
  if (shutdown_forbidden_.load()) {
    throw IllegalStateError("the loops of EventLoopGroup::singleton() never terminate");
  }
  if (thread_.joinable()) thread_.join();
}

void EventLoop::execute(UniqueFunction<void()> fn) {
  {
    // The state is read under the queue's lock, and finish_shutdown() changes it under the same
    // lock before its last look at the queue: a task is either queued in time to run there or
    // refused here, never queued behind the last look and dropped.
    std::lock_guard lock(queue_mutex_);
    if (state_.load(std::memory_order_acquire) >= kShutdown) {
      throw RejectedExecutionError("event loop " + name_ + " is shut down");
    }
    incoming_.push_back(std::move(fn));
  }
  post_drain();
}

void EventLoop::post_drain() {
  if (!drain_posted_.exchange(true, std::memory_order_acq_rel)) {
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    asio::post(*io_, [this] { drain(); });
  }
}

// Turns the loop time on for a batch of tasks (off under a manual clock: a task may advance it).
class EventLoop::LoopTimeScope {
 public:
  LoopTimeScope(EventLoop& loop, std::int64_t now) noexcept : loop_(loop) {
    if (loop.clock_ == nullptr) loop.loop_time_ = now;
  }
  ~LoopTimeScope() { loop_.loop_time_ = kLoopTimeOff; }
  LoopTimeScope(const LoopTimeScope&) = delete;
  LoopTimeScope& operator=(const LoopTimeScope&) = delete;
  // Makes the next schedule read the clock again.
  void refresh() noexcept {
    if (loop_.clock_ == nullptr) loop_.loop_time_ = kLoopTimeUnread;
  }

 private:
  EventLoop& loop_;
};

std::size_t EventLoop::run_queued_tasks() {
  take_queued_tasks();
  return run_taken_tasks();
}

void EventLoop::take_queued_tasks() {
  std::lock_guard lock(queue_mutex_);
  running_.swap(incoming_);
}

std::size_t EventLoop::run_taken_tasks() {
  std::size_t n = running_.size();
  {
    LoopTimeScope loop_time(*this, kLoopTimeUnread);
    std::size_t i = 0;
    for (auto& fn : running_) {
      if ((++i & 63) == 0) loop_time.refresh();  // a long batch does not age the loop time much
      detail::run_logged(fn);
    }
  }
  running_.clear();
  return n;
}

void EventLoop::drain() {
  drain_posted_.store(false, std::memory_order_seq_cst);
  // The queued tasks are taken before the foreign schedules, so that a task scheduled from a
  // thread before that thread's execute() is in the queue when the executed task runs.
  take_queued_tasks();
  auto n = take_in_foreign_tasks();
  if (run_taken_tasks() + n > 0) last_activity_ = monotonic_nanos();
}

std::size_t EventLoop::take_in_foreign_tasks(bool close) {
  std::size_t n = 0;
  if (auto* list = take_list(schedule_inbox_, close)) {
    detail::ScheduledTaskBase* oldest_first = nullptr;
    while (list) {
      auto* next = list->inbox_next;
      if (list->state().is_done()) {
        // Cancelled on its way: dropped at this first look. Its taken_in stays unset, so its
        // canceller sends nothing (or already sent nothing).
        list->inbox_next = nullptr;
        list->state().release();
        ++n;
      } else {
        list->inbox_next = oldest_first;
        list->taken_in.store(true, std::memory_order_relaxed);
        oldest_first = list;
      }
      list = next;
    }
    // Pairs with the canceller's seq_cst status store and taken_in load (cancel_scheduled_task):
    // either the canceller sees taken_in and sends the removal, or queue_scheduled_task() below
    // sees the task cancelled and drops it.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    bool queued = false;
    while (auto* task = oldest_first) {
      oldest_first = task->inbox_next;
      task->inbox_next = nullptr;
      queued |= queue_scheduled_task(task);
      ++n;
    }
    // Re-armed once for the batch, not per task.
    if (queued) on_scheduled_task_added(next_scheduled_deadline());
  }
  auto* cancels = take_list(cancel_inbox_, close);
  while (auto* task = cancels) {
    cancels = task->cancel_next;
    task->cancel_next = nullptr;
    remove_scheduled_task(task);
    task->state().release();  // the reference taken by cancel_scheduled_task()
    ++n;
  }
  return n;
}

bool EventLoop::foreign_tasks_pending() const noexcept {
  auto* closed = inbox_closed();
  auto* s = schedule_inbox_.load(std::memory_order_seq_cst);
  auto* c = cancel_inbox_.load(std::memory_order_seq_cst);
  return (s != nullptr && s != closed) || (c != nullptr && c != closed);
}

void EventLoop::on_scheduled_task_added(std::int64_t deadline) {
  if (deadline < armed_) rearm_timer();
}

void EventLoop::schedule_task(detail::ScheduledTaskBase* task) {
  if (detail::t_owning_loop == this) [[likely]] {
    if (queue_scheduled_task(task)) on_scheduled_task_added(task->deadline_nanos());
    return;
  }
  AbstractScheduledEventExecutor::schedule_task(task);
}

void EventLoop::schedule_from_outside(detail::ScheduledTaskBase* task) {
  auto deadline = task->deadline_nanos();
  auto* closed = inbox_closed();
  auto* head = schedule_inbox_.load(std::memory_order_relaxed);
  do {
    // Closed by finish_shutdown() after its last look: a task is either taken in there (and
    // cancelled) or refused here, never left behind.
    if (head == closed) throw RejectedExecutionError("event loop " + name_ + " is shut down");
    task->inbox_next = head;
    // seq_cst, as the read of the armed deadline below and the loop's publish-then-check in
    // rearm_timer(): either this side sees the loop's new deadline or the loop sees this task.
    // (The locked instruction is the fence; no separate one is needed.)
  } while (!schedule_inbox_.compare_exchange_weak(head, task, std::memory_order_seq_cst,
                                                  std::memory_order_relaxed));
  // Not earlier than what the loop already wakes up for: the timer handler drains the queue
  // first, so the task is queued in time without waking the loop now.
  if (deadline < armed_deadline_.load(std::memory_order_seq_cst)) post_drain();
}

void EventLoop::cancel_scheduled_task(detail::ScheduledTaskBase* task) {
  if (in_event_loop()) {
    remove_scheduled_task(task);
    return;
  }
  if (is_terminated()) return;
  // The task is cancelled already: StateBase::cancel() set its status with a seq_cst store (on
  // x86 a locked exchange, a full barrier). Still in the inbox, not taken in: the loop drops it
  // when it takes it in, nothing to send (see take_in_foreign_tasks). A seq_cst load after that
  // seq_cst store needs no fence of its own: either it sees the loop's taken_in, or the store
  // precedes the loop's fence in the single total order and the loop sees the task cancelled.
  if (!task->taken_in.load(std::memory_order_seq_cst)) return;
  task->state().add_ref();  // kept alive until the loop has taken the cancellation in
  auto* closed = inbox_closed();
  auto* head = cancel_inbox_.load(std::memory_order_relaxed);
  do {
    if (head == closed) {
      // Shut down: the loop cancels and drops every queued task itself.
      task->state().release();
      return;
    }
    task->cancel_next = head;
  } while (!cancel_inbox_.compare_exchange_weak(head, task, std::memory_order_release,
                                                std::memory_order_relaxed));
  // The task can no longer run; the loop only has to drop it, so the cancellation waits for the
  // loop's next look (Netty's lazy removal), except that every 1024th cancellation from a thread
  // wakes the loop: an idle loop holds at most that many per cancelling thread.
  static thread_local constinit std::uint32_t t_cancels = 0;
  if ((++t_cancels & 1023) == 0) post_drain();
}

void EventLoop::rearm_timer() {
  auto next = next_scheduled_deadline();
  auto want = next < 0 ? kNoDeadline : next;
  if (want == armed_) return;
  const bool later = want > armed_;
  armed_ = want;
  armed_deadline_.store(want, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  auto generation = ++timer_generation_;
  if (want == kNoDeadline) {
    asio_->timer.cancel();
  } else if (clock_ != nullptr) {
    // Manual clock: no timer. A deadline already reached fires now; a later one when an advance
    // of the clock reaches it (on_clock_advanced).
    if (want <= clock_->now_nanos()) asio::post(*io_, [this, generation] { on_timer(generation); });
  } else {
    asio_->timer.expires_at(to_time_point(want));
    asio_->timer.async_wait([this, generation](const asio::error_code& ec) {
      if (!ec) on_timer(generation);
    });
  }
  // Moving to a later deadline: a task scheduled lazily from another thread against the old,
  // earlier one may be due before the new one; make sure it is picked up. (Moving earlier needs
  // no look: what was lazy against the old deadline is lazy against the new one too. Looking
  // anyway, from inside a drain, posted a second drain for tasks that drain was about to run.)
  if (later) drain_if_pending();
}

void EventLoop::drain_if_pending() {
  bool pending = foreign_tasks_pending();
  if (!pending) {
    std::lock_guard lock(queue_mutex_);
    pending = !incoming_.empty();
  }
  if (pending) post_drain();
}

void EventLoop::on_timer(std::uint64_t generation) {
  if (generation != timer_generation_) return;
  armed_ = kNoDeadline;
  armed_deadline_.store(kNoDeadline, std::memory_order_seq_cst);
  drain();
  auto now = current_time_nanos();
  std::size_t ran;
  {
    LoopTimeScope loop_time(*this, now);
    ran = run_due_scheduled_tasks(now);
  }
  if (ran > 0) last_activity_ = monotonic_nanos();
  rearm_timer();
}

void EventLoop::on_clock_advanced() {
  // A queued task (inside drain()): it runs the due tasks itself instead of calling on_timer.
  if (armed_ == kNoDeadline || clock_->now_nanos() < armed_) return;
  armed_ = kNoDeadline;
  armed_deadline_.store(kNoDeadline, std::memory_order_seq_cst);
  if (run_due_scheduled_tasks(clock_->now_nanos()) > 0) last_activity_ = monotonic_nanos();
  rearm_timer();
  // Tasks scheduled lazily from other threads after this drain began (their deadline was not
  // earlier than the one armed) wait in the queue: rearm_timer() may have returned early.
  drain_if_pending();
}

void EventLoop::on_shutdown(UniqueFunction<void()> fn) {
  execute([this, fn = std::move(fn)]() mutable {
    // Too late to wait for the hooks (finish_shutdown took them already): run it now.
    if (hooks_taken_ || state_.load() >= kShutdown) {
      detail::run_logged(fn);
    } else {
      shutdown_hooks_.push_back(std::move(fn));
    }
  });
}

Future<void> EventLoop::do_shutdown_gracefully(std::chrono::nanoseconds quiet_period,
                                               std::chrono::nanoseconds timeout) {
  if (shutdown_forbidden_.load()) {
    throw IllegalStateError("the loops of EventLoopGroup::singleton() cannot be shut down");
  }
  auto now = monotonic_nanos();
  int expected = kRunning;
  if (state_.compare_exchange_strong(expected, kShuttingDown)) {
    quiet_nanos_.store(quiet_period.count());
    shutdown_deadline_.store(detail::deadline_after(now, timeout.count()));
  } else if (expected == kShuttingDown) {
    // A later call may shorten the wait, never lengthen it.
    if (quiet_period.count() < quiet_nanos_.load()) quiet_nanos_.store(quiet_period.count());
    auto d = detail::deadline_after(now, timeout.count());
    if (d < shutdown_deadline_.load()) shutdown_deadline_.store(d);
  } else {
    return termination_.future();
  }
  asio::post(*io_, [this] { check_shutdown(); });
  return termination_.future();
}

void EventLoop::check_shutdown() {
  if (state_.load() != kShuttingDown) return;
  auto now = monotonic_nanos();
  auto quiet_end = detail::deadline_after(last_activity_, quiet_nanos_.load());
  auto deadline = shutdown_deadline_.load();
  if (now >= quiet_end || now >= deadline) {
    finish_shutdown();
    return;
  }
  auto next = std::min({quiet_end, deadline, detail::deadline_after(now, kShutdownCheckNanos)});
  asio_->shutdown_timer.expires_at(to_time_point(next));
  asio_->shutdown_timer.async_wait([this](const asio::error_code& ec) {
    if (!ec) check_shutdown();
  });
}

void EventLoop::finish_shutdown() {
  hooks_taken_ = true;
  auto hooks = std::move(shutdown_hooks_);
  for (auto& hook : hooks) detail::run_logged(hook);
  run_queued_tasks();
  {
    std::lock_guard lock(queue_mutex_);  // see execute()
    state_.store(kShutdown, std::memory_order_release);
  }
  run_queued_tasks();
  take_in_foreign_tasks(/*close=*/true);
  cancel_scheduled_tasks();
  asio_->timer.cancel();
  asio_->shutdown_timer.cancel();
  io_->stop();
}

}  // namespace trellis
