// The work-stealing compute pool (see work_stealing_pool.hpp and docs/blocking.md).
#include <trellis/pipeline/work_stealing_pool.hpp>

#include <algorithm>
#include <cassert>
#include <limits>
#include <thread>

#include <spdlog/spdlog.h>

#include <trellis/pipeline/detail/parker.hpp>
#include <trellis/pipeline/detail/run_logged.hpp>
#include <trellis/pipeline/detail/thread_role.hpp>
#include <trellis/pipeline/detail/work_stealing_deque.hpp>

namespace trellis {

namespace detail {
// A queued callable. Nodes are recycled through a small per-thread free list, so a steady flow
// of execute() calls allocates nothing once warm.
struct PoolJob {
  PoolJob* next = nullptr;
  UniqueFunction<void()> fn;
};
}  // namespace detail

namespace {
using detail::PoolJob;
using detail::ThreadRole;
using detail::ThreadRoleState;

constexpr std::size_t kLocalCapacity = 256;
constexpr std::uint32_t kInjectionInterval = 61;  // as Go and Tokio: fairness for the shared queue
constexpr std::uint32_t kTimerInterval = 16;
constexpr int kSearchRounds = 4;
constexpr std::size_t kJobCacheMax = 256;
constexpr std::int64_t kNoDeadline = std::numeric_limits<std::int64_t>::max();
constexpr std::uint32_t kOffered = 1;

struct JobCache {
  PoolJob* head = nullptr;
  std::size_t count = 0;
  ~JobCache() {
    while (head) delete std::exchange(head, head->next);
  }
};
thread_local JobCache t_jobs;

PoolJob* alloc_job(UniqueFunction<void()> fn) {
  auto& cache = t_jobs;
  if (PoolJob* job = cache.head) {
    cache.head = job->next;
    --cache.count;
    job->next = nullptr;
    job->fn = std::move(fn);
    return job;
  }
  return new PoolJob{nullptr, std::move(fn)};
}

void free_job(PoolJob* job) noexcept {
  job->fn.reset();
  auto& cache = t_jobs;
  if (cache.count >= kJobCacheMax) {
    delete job;
    return;
  }
  job->next = cache.head;
  cache.head = job;
  ++cache.count;
}

void cpu_relax(int round) noexcept {
  if (round == 0) {
#if defined(__x86_64__) || defined(__i386__)
    for (int i = 0; i < 32; ++i) __builtin_ia32_pause();
#endif
  } else {
    std::this_thread::yield();
  }
}
}  // namespace

struct WorkStealingPool::Worker {
  explicit Worker(std::size_t i) : index(i), rng(static_cast<std::uint32_t>(i) * 2654435761u + 1) {}
  std::size_t index;
  detail::WorkStealingDeque<Job*, kLocalCapacity> queue;
  detail::Parker parker;
  bool idle = false;  // in idle_ (under idle_mutex_)
  // Owner-only (they move with the worker role on a hand-off).
  std::uint32_t rng;
  std::uint32_t tick = 0;
  // A hand-off counts the replacement as searching before it runs (as notify_one does for a
  // woken worker), so work the blocker re-queues meanwhile does not wake a second worker.
  bool searching_credit = false;
  // Hand-off state: kOffered while the role is offered and nobody took it. Whoever clears it
  // first owns the role: a replacement thread when it starts, or the old owner when its job
  // returns first (a short section).
  std::atomic<std::uint32_t> handoff{0};
#ifndef NDEBUG
  // The thread that holds the role (checked in builds with assertions: one owner at a time).
  std::atomic<std::thread::id> owner{};
#endif
};

namespace {
// Assertion builds only: the calling thread becomes w's one owner, or stops being it.
template <class W>
void take_ownership([[maybe_unused]] W& w) noexcept {
#ifndef NDEBUG
  auto previous = w.owner.exchange(std::this_thread::get_id(), std::memory_order_relaxed);
  assert(previous == std::thread::id{} && "a worker role has two owners");
#endif
}
template <class W>
void give_up_ownership([[maybe_unused]] W& w) noexcept {
#ifndef NDEBUG
  auto previous = w.owner.exchange(std::thread::id{}, std::memory_order_relaxed);
  assert(previous == std::this_thread::get_id() && "a worker role given up by a non-owner");
#endif
}
template <class W>
void check_ownership([[maybe_unused]] const W& w) noexcept {
  assert(w.owner.load(std::memory_order_relaxed) == std::this_thread::get_id() &&
         "a worker role run by a thread that does not own it");
}
}  // namespace

WorkStealingPool::WorkStealingPool() : WorkStealingPool(Options{}) {}

WorkStealingPool::WorkStealingPool(std::size_t threads)
    : WorkStealingPool([threads] {
        Options o;
        o.threads = threads;
        return o;
      }()) {}

WorkStealingPool::WorkStealingPool(Options options)
    : in_place_(options.in_place_blocking),
      name_(std::move(options.name)),
      cache_({options.blocker_keep_alive, options.max_threads, "trellis-blocker"}),
      next_deadline_(kNoDeadline),
      termination_(nullptr) {
  std::size_t n = options.threads;
  if (n == 0) n = std::max<std::size_t>(1, std::thread::hardware_concurrency());
  workers_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) workers_.push_back(std::make_unique<Worker>(i));
  cache_.set_on_exit([this] {
    terminated_.store(true, std::memory_order_release);
    termination_.try_set_value();
  });
  running_workers_.store(n);
  std::size_t started = 0;
  try {
    for (; started < n; ++started) {
      Worker* w = workers_[started].get();
      cache_.start_thread([this, w] { worker_loop(*w); }, name_ + "-" + std::to_string(started));
    }
  } catch (...) {
    // Workers that never started count as stopped; the started ones stop at once.
    running_workers_.fetch_sub(n - started);
    do_shutdown_gracefully(std::chrono::nanoseconds(0), std::chrono::nanoseconds(0));
    if (started == 0) finalize_stop();
    cache_.join();
    throw;
  }
}

WorkStealingPool::~WorkStealingPool() {
  do_shutdown_gracefully(std::chrono::nanoseconds(0), std::chrono::nanoseconds(0));
  cache_.join();
}

// ---- submission -------------------------------------------------------------------------------

void WorkStealingPool::execute(UniqueFunction<void()> fn) {
  const auto& role = detail::t_thread_role;
  if (role.role == ThreadRole::kWorker && role.pool == this) {
    auto* w = static_cast<Worker*>(role.slot);
    Job* job = alloc_job(std::move(fn));
    std::size_t before = w->queue.size();
    if (!w->queue.push(job)) {
      push_injected(job);
      notify_one();
    } else if (before > 0) {
      // More work than this worker will take next: let an idle worker help. The RMW orders the
      // push against a parking worker's own RMW of idle_count_ (no lost wake-up); it is a
      // fence that TSan understands.
      idle_count_.fetch_add(0, std::memory_order_seq_cst);
      notify_one();
    }
    return;
  }
  push_injected(alloc_job(std::move(fn)));
  notify_one();
}

void WorkStealingPool::push_injected(Job* job) {
  {
    std::lock_guard lock(inject_mutex_);
    if (!stopped_.load(std::memory_order_relaxed)) {
      if (inject_tail_) {
        inject_tail_->next = job;
      } else {
        inject_head_ = job;
      }
      inject_tail_ = job;
      injected_.fetch_add(1, std::memory_order_seq_cst);
      return;
    }
  }
  free_job(job);
  throw RejectedExecutionError(name_ + " is terminated");
}

WorkStealingPool::Job* WorkStealingPool::take_injected() {
  if (injected_.load(std::memory_order_seq_cst) == 0) return nullptr;
  std::lock_guard lock(inject_mutex_);
  Job* job = inject_head_;
  if (job) {
    inject_head_ = job->next;
    if (!inject_head_) inject_tail_ = nullptr;
    job->next = nullptr;
    injected_.fetch_sub(1, std::memory_order_relaxed);
  }
  return job;
}

bool WorkStealingPool::in_event_loop() const {
  const auto& role = detail::t_thread_role;
  return role.role == ThreadRole::kWorker && role.pool == this;
}

// ---- parking ----------------------------------------------------------------------------------

void WorkStealingPool::notify_one() {
  if (searching_.load(std::memory_order_seq_cst) != 0) return;
  if (idle_count_.load(std::memory_order_seq_cst) == 0) return;
  Worker* w;
  {
    std::lock_guard lock(idle_mutex_);
    // Re-checked under the lock: concurrent notifiers wake one worker, not one each.
    if (idle_.empty() || searching_.load(std::memory_order_relaxed) != 0) return;
    w = idle_.back();  // the most recently parked: its caches are warmest
    idle_.pop_back();
    w->idle = false;
    idle_count_.fetch_sub(1, std::memory_order_relaxed);
    searching_.fetch_add(1, std::memory_order_seq_cst);  // on w's behalf
  }
  w->parker.unpark();
}

void WorkStealingPool::notify_all() {
  std::vector<Worker*> woken;
  {
    std::lock_guard lock(idle_mutex_);
    woken.swap(idle_);
    for (Worker* w : woken) w->idle = false;
    idle_count_.store(0, std::memory_order_seq_cst);
    searching_.fetch_add(woken.size(), std::memory_order_seq_cst);
  }
  for (Worker* w : woken) w->parker.unpark();
}

bool WorkStealingPool::remove_idle(Worker& w) {
  std::lock_guard lock(idle_mutex_);
  if (!w.idle) return false;
  idle_.erase(std::find(idle_.begin(), idle_.end(), &w));
  w.idle = false;
  idle_count_.fetch_sub(1, std::memory_order_seq_cst);
  return true;
}

bool WorkStealingPool::work_visible(const Worker& w) const noexcept {
  if (injected_.load(std::memory_order_seq_cst) != 0) return true;
  if (!w.queue.empty()) return true;
  for (const auto& other : workers_) {
    if (!other->queue.empty()) return true;
  }
  return false;
}

// ---- the worker -------------------------------------------------------------------------------

void WorkStealingPool::worker_loop(Worker& w) {
  auto& role = detail::t_thread_role;
  take_ownership(w);
  role = ThreadRoleState{ThreadRole::kWorker, this, &w};
  detail::CurrentExecutorScope scope(this);
  while (Job* job = next_job(w)) {
    detail::run_logged(job->fn);
    free_job(job);
    // The job may have handed the worker role off (and has now suspended or ended).
    while (role.slot != &w) {
      end_outstanding_blocking();
      if (!(w.handoff.fetch_and(~kOffered, std::memory_order_acq_rel) & kOffered)) {
        return;  // this thread is a blocker and goes back to the cache; the replacement runs w
      }
      // No replacement has started yet: take the role back. A short section then costs one
      // wake-up, not two; the replacement on its way becomes a spare for the next hand-off.
      take_ownership(w);
      spare_claimers_.fetch_add(1, std::memory_order_seq_cst);
      role = ThreadRoleState{ThreadRole::kWorker, this, &w};
      // A worker again: post what the task left now. That only posts (never resumes a task
      // here), but check the role again all the same before running w.
      detail::run_deferred_until_idle();
    }
  }
  stop_worker();
}

WorkStealingPool::Job* WorkStealingPool::next_job(Worker& w) {
  check_ownership(w);
  ++w.tick;
  if (w.tick % kTimerInterval == 0) push_due_timers(w);
  Job* job = nullptr;
  if (w.tick % kInjectionInterval == 0) job = take_injected();
  if (!job) job = w.queue.take();
  if (!job) job = take_injected();
  if (job) {
    if (std::exchange(w.searching_credit, false)) leave_search(w);
  } else {
    job = search(w);
  }
  if (job && shutting_down_.load(std::memory_order_acquire)) mark_activity();
  return job;
}

void WorkStealingPool::leave_search(const Worker& w) {
  // The last searcher to find work wakes a successor if more is visible, so a burst is picked
  // up one worker at a time rather than by all of them at once.
  if (searching_.fetch_sub(1, std::memory_order_seq_cst) == 1 && work_visible(w)) notify_one();
}

WorkStealingPool::Job* WorkStealingPool::steal(Worker& w) {
  std::size_t n = workers_.size();
  if (n < 2) return nullptr;
  w.rng ^= w.rng << 13;
  w.rng ^= w.rng >> 17;
  w.rng ^= w.rng << 5;
  std::size_t start = w.rng % n;
  for (std::size_t i = 0; i < n; ++i) {
    auto& victim = *workers_[(start + i) % n];
    if (&victim == &w) continue;
    if (Job* job = victim.queue.take()) return job;
  }
  return nullptr;
}

WorkStealingPool::Job* WorkStealingPool::search(Worker& w) {
  bool counted = std::exchange(w.searching_credit, false);  // whether searching_ counts us
  for (;;) {
    if (!counted) searching_.fetch_add(1, std::memory_order_seq_cst);
    counted = true;
    for (int round = 0; round < kSearchRounds; ++round) {
      push_due_timers(w);
      Job* job = w.queue.take();
      if (!job) job = take_injected();
      if (!job) job = steal(w);
      if (job) {
        leave_search(w);
        return job;
      }
      cpu_relax(round);
    }

    searching_.fetch_sub(1, std::memory_order_seq_cst);
    counted = false;
    if (should_stop(current_time_nanos())) return nullptr;
    {
      std::lock_guard lock(idle_mutex_);
      w.idle = true;
      idle_.push_back(&w);
      idle_count_.fetch_add(1, std::memory_order_seq_cst);
    }
    // Announced as idle: anything pushed from now on wakes someone, so check once more.
    if (work_visible(w) || next_deadline_.load(std::memory_order_seq_cst) <= current_time_nanos()) {
      counted = !remove_idle(w);  // not idle any more: a notifier counted us as searching
      continue;
    }
    bool watching = false;
    w.parker.park_until(park_deadline(w, watching));
    if (watching) timer_watcher_.store(-1, std::memory_order_seq_cst);
    counted = !remove_idle(w);
  }
}

std::int64_t WorkStealingPool::park_deadline(Worker& w, bool& watching) {
  std::int64_t deadline = -1;
  if (next_deadline_.load(std::memory_order_seq_cst) != kNoDeadline) {
    int expected = -1;
    if (timer_watcher_.compare_exchange_strong(expected, static_cast<int>(w.index),
                                               std::memory_order_seq_cst)) {
      watching = true;
      deadline = next_deadline_.load(std::memory_order_seq_cst);
      if (deadline == kNoDeadline) deadline = -1;
    }
  }
  if (shutting_down_.load(std::memory_order_acquire)) {
    // While blocking sections run, only the timeout can stop the pool (the last section to end
    // wakes everyone), so do not wake up for the quiet period.
    auto stop_at = shutdown_deadline_.load();
    if (outstanding_blocking_.load(std::memory_order_seq_cst) == 0) {
      stop_at =
          std::min(stop_at, detail::deadline_after(last_activity_.load(), quiet_nanos_.load()));
    }
    deadline = deadline < 0 ? stop_at : std::min(deadline, stop_at);
  }
  return deadline;
}

// ---- timers -----------------------------------------------------------------------------------

void WorkStealingPool::schedule_task(detail::ScheduledTaskBase* task) {
  std::unique_lock lock(timer_mutex_);
  if (stopped_.load(std::memory_order_relaxed)) {
    lock.unlock();
    task->state().try_fail(
        std::make_exception_ptr(RejectedExecutionError(name_ + " is terminated")));
    task->state().release();
    throw RejectedExecutionError(name_ + " is terminated");
  }
  add_scheduled_task(task);
}

void WorkStealingPool::cancel_scheduled_task(detail::ScheduledTaskBase* task) {
  std::lock_guard lock(timer_mutex_);
  // A stale (earlier) next_deadline_ only costs one spurious wake-up.
  remove_scheduled_task(task);
}

void WorkStealingPool::on_scheduled_task_added(std::int64_t deadline) {
  // Under timer_mutex_.
  if (deadline >= next_deadline_.load(std::memory_order_relaxed)) return;
  next_deadline_.store(deadline, std::memory_order_seq_cst);
  int watcher = timer_watcher_.load(std::memory_order_seq_cst);
  if (watcher >= 0) {
    workers_[static_cast<std::size_t>(watcher)]->parker.unpark();  // sleeps too long: re-arm
  } else {
    notify_one();  // an idle worker wakes, then parks again as the watcher
  }
}

void WorkStealingPool::push_due_timers(Worker& w) {
  if (next_deadline_.load(std::memory_order_acquire) == kNoDeadline) return;
  auto now = current_time_nanos();
  if (now < next_deadline_.load(std::memory_order_acquire)) return;
  int pushed = 0;
  for (;;) {
    detail::ScheduledTaskBase* task;
    {
      std::lock_guard lock(timer_mutex_);
      task = poll_scheduled_task(now);
      auto next = next_scheduled_deadline();
      next_deadline_.store(next < 0 ? kNoDeadline : next, std::memory_order_seq_cst);
    }
    if (!task) break;
    Job* job = alloc_job([this, task] { run_timer(task); });
    if (!w.queue.push(job)) push_injected(job);
    ++pushed;
  }
  if (pushed > 1) notify_one();
}

void WorkStealingPool::run_timer(detail::ScheduledTaskBase* task) {
  if (!task->run()) {
    task->state().release();
    return;
  }
  std::unique_lock lock(timer_mutex_);
  if (stopped_.load(std::memory_order_relaxed)) {
    lock.unlock();
    cancel_and_release({task});
    return;
  }
  add_scheduled_task(task);  // periodic: same node, same reference
}

// ---- blocking support -------------------------------------------------------------------------

void WorkStealingPool::claim_offered_role() {
  for (;;) {
    for (auto& w : workers_) {
      if ((w->handoff.load(std::memory_order_acquire) & kOffered) &&
          (w->handoff.fetch_and(~kOffered, std::memory_order_acq_rel) & kOffered)) {
        worker_loop(*w);
        return;
      }
    }
    // Nothing offered: this thread is a spare, unless a hand-off reserved it (it publishes its
    // offer first, so look again) or a take-back has not counted it yet (the same).
    auto spare = spare_claimers_.load(std::memory_order_seq_cst);
    if (spare > 0) {
      // About to go back to the cache: announce it first, so that a hand-off that finds no
      // spare and no idle thread in the meantime queues its job for this thread instead of
      // starting a new one.
      cache_.announce_return();
      while (spare > 0) {
        if (spare_claimers_.compare_exchange_weak(spare, spare - 1, std::memory_order_seq_cst)) {
          return;
        }
      }
      cache_.withdraw_return();  // a hand-off reserved this thread after all: look again
    }
    std::this_thread::yield();
  }
}

bool WorkStealingPool::hand_off_worker_role() {
  auto& role = detail::t_thread_role;
  auto* w = static_cast<Worker*>(role.slot);
  begin_outstanding_blocking();
  w->searching_credit = true;
  searching_.fetch_add(1, std::memory_order_seq_cst);
  role = ThreadRoleState{ThreadRole::kBlocker, nullptr, nullptr};
  give_up_ownership(*w);
  // From here on this thread must not touch w: a replacement may take it at any moment.
  w->handoff.store(kOffered, std::memory_order_seq_cst);
  // A replacement already on its way whose role was taken back takes this one.
  auto spare = spare_claimers_.load(std::memory_order_seq_cst);
  while (spare > 0) {
    if (spare_claimers_.compare_exchange_weak(spare, spare - 1, std::memory_order_seq_cst)) {
      hand_offs_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  UniqueFunction<void()> job([this] { claim_offered_role(); });
  if (!cache_.try_run(job)) {
    if (w->handoff.fetch_and(~kOffered, std::memory_order_acq_rel) & kOffered) {
      // No replacement exists: still ours.
      take_ownership(*w);
      w->searching_credit = false;
      searching_.fetch_sub(1, std::memory_order_seq_cst);
      role = ThreadRoleState{ThreadRole::kWorker, this, w};
      end_outstanding_blocking();
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true)) {
        spdlog::warn("trellis: {} reached its thread cap ({}); blocking sections stall workers",
                     name_, cache_.max_threads());
      }
      return false;
    }
    // A replacement on its way took it after all, though it was not reserved: the spare count
    // (replacements on their way minus roles offered) owes one.
    spare_claimers_.fetch_sub(1, std::memory_order_seq_cst);
  }
  hand_offs_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void WorkStealingPool::begin_outstanding_blocking() noexcept {
  outstanding_blocking_.fetch_add(1, std::memory_order_seq_cst);
}

void WorkStealingPool::end_outstanding_blocking() noexcept {
  bool last = outstanding_blocking_.fetch_sub(1, std::memory_order_seq_cst) == 1;
  if (shutting_down_.load(std::memory_order_acquire)) {
    mark_activity();
    if (last) notify_all();  // workers waiting for blocked sections before stopping
  }
}

std::size_t WorkStealingPool::live_blocker_threads() const {
  auto live = cache_.live_threads();
  auto workers = running_workers_.load(std::memory_order_acquire);
  return live > workers ? live - workers : 0;
}

// ---- lifecycle --------------------------------------------------------------------------------

bool WorkStealingPool::is_shutting_down() const {
  return shutting_down_.load(std::memory_order_acquire);
}

bool WorkStealingPool::is_terminated() const { return terminated_.load(std::memory_order_acquire); }

void WorkStealingPool::mark_activity() noexcept {
  last_activity_.store(current_time_nanos(), std::memory_order_relaxed);
}

Future<void> WorkStealingPool::do_shutdown_gracefully(std::chrono::nanoseconds quiet_period,
                                                      std::chrono::nanoseconds timeout) {
  {
    std::lock_guard lock(timer_mutex_);
    auto now = current_time_nanos();
    auto deadline = detail::deadline_after(now, timeout.count());
    if (!shutting_down_.load(std::memory_order_relaxed)) {
      quiet_nanos_.store(quiet_period.count());
      shutdown_deadline_.store(deadline);
      last_activity_.store(now);
      shutting_down_.store(true, std::memory_order_seq_cst);
    } else {
      // A later call may shorten the wait, never lengthen it.
      quiet_nanos_.store(std::min<std::int64_t>(quiet_nanos_.load(), quiet_period.count()));
      shutdown_deadline_.store(std::min(shutdown_deadline_.load(), deadline));
    }
  }
  notify_all();
  // Parked workers re-evaluate on their own deadline; busy ones when they run out of work.
  for (auto& w : workers_) w->parker.unpark();
  return termination_.future();
}

bool WorkStealingPool::should_stop(std::int64_t now) const {
  if (!shutting_down_.load(std::memory_order_acquire)) return false;
  if (now >= shutdown_deadline_.load()) return true;
  return outstanding_blocking_.load(std::memory_order_seq_cst) == 0 &&
         now - last_activity_.load() >= quiet_nanos_.load();
}

void WorkStealingPool::stop_worker() {
  notify_all();  // the others re-check and stop too
  if (running_workers_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  finalize_stop();
}

void WorkStealingPool::finalize_stop() {
  // The last worker: refuse new work, drop what is left, let every thread exit.
  Job* jobs;
  {
    std::lock_guard lock(inject_mutex_);
    stopped_.store(true, std::memory_order_seq_cst);
    jobs = std::exchange(inject_head_, nullptr);
    inject_tail_ = nullptr;
    injected_.store(0, std::memory_order_seq_cst);
  }
  std::vector<detail::ScheduledTaskBase*> timers;
  {
    std::lock_guard lock(timer_mutex_);
    timers = take_scheduled_tasks();
    next_deadline_.store(kNoDeadline, std::memory_order_seq_cst);
  }
  for (auto& w : workers_) {
    while (Job* job = w->queue.take()) free_job(job);
  }
  while (jobs) free_job(std::exchange(jobs, jobs->next));
  cancel_and_release(timers);
  cache_.shutdown();
}

}  // namespace trellis
