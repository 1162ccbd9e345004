// The cache of blocker threads (see detail/blocker_cache.hpp).
#include <trellis/pipeline/detail/blocker_cache.hpp>

#include <pthread.h>

#include <algorithm>
#include <system_error>

#include <spdlog/spdlog.h>

#include <trellis/pipeline/detail/run_logged.hpp>
#include <trellis/pipeline/detail/thread_role.hpp>

namespace trellis::detail {

namespace {
thread_local std::string t_cache_thread_name;
// The slot of defer_until_idle on a cache thread (in thread_main's frame), else null.
thread_local constinit UniqueFunction<void()>* t_deferred = nullptr;
// This cache thread announced its return (see BlockerCache::announce_return).
thread_local constinit bool t_announced_return = false;
}  // namespace

bool defer_until_idle(UniqueFunction<void()>& action) noexcept {
  auto* slot = t_deferred;
  if (slot == nullptr || *slot || t_thread_role.role != ThreadRole::kBlocker) return false;
  *slot = std::move(action);
  return true;
}

void run_deferred_until_idle() noexcept {
  auto* slot = t_deferred;
  if (slot == nullptr) return;
  while (*slot) {  // what an action defers in turn runs too
    auto action = std::move(*slot);
    slot->reset();
    run_logged(action, "a blocker job");
  }
}

BlockerCache::BlockerCache(Options options) : options_(std::move(options)) {}

BlockerCache::~BlockerCache() {
  shutdown();
  join();
}

const std::string& BlockerCache::current_thread_name() noexcept { return t_cache_thread_name; }

bool BlockerCache::hand_to_idle_locked(UniqueFunction<void()>& job) {
  if (idle_.empty()) return false;
  Thread* t = idle_.back();
  idle_.pop_back();
  t->idle = false;
  t->job = std::move(job);
  // Notified under the lock: the thread cannot have timed out and left meanwhile (it would need
  // the lock to remove itself from idle_), and Thread outlives its own wait.
  t->cv.notify_one();
  return true;
}

void BlockerCache::start_locked(UniqueFunction<void()>& job, std::string name) {
  auto node = std::make_unique<Thread>();
  Thread* self = node.get();
  // Creating the thread under the lock keeps node->thread assigned before anyone can join it;
  // thread creation is the cold path.
  node->thread = std::thread([this, self, n = std::move(name), j = std::move(job)]() mutable {
    thread_main(self, std::move(n), std::move(j));
  });
  threads_.push_back(std::move(node));
  ++live_;
}

void BlockerCache::announce_return() {
  if (t_announced_return) return;
  std::lock_guard lock(mutex_);
  ++returning_;
  t_announced_return = true;
}

void BlockerCache::withdraw_return() {
  if (!t_announced_return) return;
  std::lock_guard lock(mutex_);
  --returning_;
  t_announced_return = false;
}

bool BlockerCache::try_run(UniqueFunction<void()>& job) {
  std::vector<std::unique_ptr<Thread>> zombies;
  {
    std::lock_guard lock(mutex_);
    if (shutdown_) return false;
    if (hand_to_idle_locked(job)) return true;
    if (returning_ > pending_.size()) {
      // A thread is on its way back: it takes the job before it goes idle (next_job).
      pending_.push_back(std::move(job));
      return true;
    }
    if (live_ >= options_.max_threads) return false;
    zombies = take_zombies_locked();
    auto index = ++next_index_;
    try {
      start_locked(job, options_.name + "-" + std::to_string(index));
    } catch (const std::system_error& e) {
      spdlog::error("trellis: could not start a blocker thread: {}", e.what());
      return false;
    }
    ++created_;
  }
  for (auto& z : zombies) z->thread.join();
  return true;
}

bool BlockerCache::run(UniqueFunction<void()>& job) {
  if (try_run(job)) return true;
  std::lock_guard lock(mutex_);
  if (shutdown_) return false;
  if (hand_to_idle_locked(job)) return true;  // one became idle meanwhile
  if (live_ == 0) return false;               // nobody would ever take it
  pending_.push_back(std::move(job));
  return true;
}

void BlockerCache::start_thread(UniqueFunction<void()> job, std::string thread_name) {
  std::lock_guard lock(mutex_);
  start_locked(job, std::move(thread_name));
}

void BlockerCache::shutdown() {
  UniqueFunction<void()> on_exit;
  {
    std::lock_guard lock(mutex_);
    if (shutdown_) return;
    shutdown_ = true;
    for (Thread* t : idle_) t->cv.notify_one();
    if (live_ == 0) on_exit = std::move(on_exit_);
  }
  if (on_exit) on_exit();
}

void BlockerCache::set_on_exit(UniqueFunction<void()> on_exit) {
  std::lock_guard lock(mutex_);
  on_exit_ = std::move(on_exit);
}

void BlockerCache::join() {
  std::vector<std::unique_ptr<Thread>> zombies;
  {
    std::unique_lock lock(mutex_);
    exited_cv_.wait(lock, [this] { return live_ == 0; });
    zombies = take_zombies_locked();
  }
  for (auto& z : zombies) {
    if (z->thread.get_id() == std::this_thread::get_id()) {
      spdlog::error("trellis: a blocker cache joined from its own thread; detaching it");
      z->thread.detach();
    } else {
      z->thread.join();
    }
  }
}

void BlockerCache::join_exited() {
  std::vector<std::unique_ptr<Thread>> zombies;
  {
    std::lock_guard lock(mutex_);
    zombies = take_zombies_locked();
  }
  for (auto& z : zombies) {
    if (z->thread.get_id() == std::this_thread::get_id()) {
      z->thread.detach();
    } else {
      z->thread.join();  // it has left thread_main, or is about to
    }
  }
}

std::uint64_t BlockerCache::threads_created() const {
  std::lock_guard lock(mutex_);
  return created_;
}

std::size_t BlockerCache::live_threads() const {
  std::lock_guard lock(mutex_);
  return live_;
}

std::size_t BlockerCache::idle_threads() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

std::vector<std::unique_ptr<BlockerCache::Thread>> BlockerCache::take_zombies_locked() {
  return std::exchange(zombies_, {});
}

bool BlockerCache::next_job(Thread* self, UniqueFunction<void()>& job,
                            UniqueFunction<void()>& deferred) {
  std::unique_lock lock(mutex_);
  if (t_announced_return) {
    --returning_;
    t_announced_return = false;
  }
  bool registered = false;
  if (deferred) {
    // Idle first, then run what the last job deferred: work it hands over can take this thread.
    if (pending_.empty() && !shutdown_) {
      self->idle = true;
      idle_.push_back(self);
      registered = true;
    }
    lock.unlock();
    run_deferred_until_idle();  // (may defer again: it loops)
    lock.lock();
  }
  if (!registered) {
    if (!pending_.empty()) {
      job = std::move(pending_.front());
      pending_.pop_front();
      return true;
    }
    if (shutdown_) return false;
    self->idle = true;
    idle_.push_back(self);
  }
  auto deadline = std::chrono::steady_clock::now() + options_.keep_alive;
  for (;;) {
    if (!self->idle) {  // a taker handed us a job
      job = std::move(self->job);
      return true;
    }
    if (shutdown_) break;
    if (self->cv.wait_until(lock, deadline) == std::cv_status::timeout && self->idle) break;
  }
  // Expired or shut down while still idle: under the lock no taker can pick us any more.
  idle_.erase(std::find(idle_.begin(), idle_.end(), self));
  self->idle = false;
  return false;
}

void BlockerCache::thread_main(Thread* self, std::string name, UniqueFunction<void()> first) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  t_cache_thread_name = std::move(name);
  t_thread_role = ThreadRoleState{ThreadRole::kBlocker, nullptr, nullptr};
  UniqueFunction<void()> job = std::move(first);
  UniqueFunction<void()> deferred;
  t_deferred = &deferred;
  do {
    run_logged(job, "a blocker job");
    job.reset();
    t_thread_role = ThreadRoleState{ThreadRole::kBlocker, nullptr, nullptr};
  } while (next_job(self, job, deferred));
  t_deferred = nullptr;

  UniqueFunction<void()> on_exit;
  {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(threads_.begin(), threads_.end(),
                           [self](const auto& p) { return p.get() == self; });
    zombies_.push_back(std::move(*it));
    threads_.erase(it);
    --live_;
    if (live_ == 0 && shutdown_) on_exit = std::move(on_exit_);
    exited_cv_.notify_all();
  }
  // After the unlock the cache may be joined (which waits for this thread to return) but not
  // destroyed, so on_exit may still run here.
  if (on_exit) on_exit();
}

}  // namespace trellis::detail
