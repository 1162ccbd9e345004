// Blocking sections: the per-thread role and the paths blocking() takes (see blocking.hpp).
#include <trellis/pipeline/blocking.hpp>

#include <cstdlib>
#include <mutex>

#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/work_stealing_pool.hpp>

namespace trellis {

namespace detail {

thread_local constinit ThreadRoleState t_thread_role{};

BlockingPlan plan_blocking(EventExecutor* executor) {
  auto& role = t_thread_role;
  if (role.role == ThreadRole::kBlocker || executor == nullptr) return BlockingPlan::kInPlace;
  if (role.role == ThreadRole::kWorker && role.pool == executor) {
    if (!role.pool->in_place_blocking()) return BlockingPlan::kShift;
    // At the thread cap the hand-off fails and fn runs on the worker anyway: blocking a worker
    // beats queueing behind threads that may never return.
    role.pool->hand_off_worker_role();
    return BlockingPlan::kInPlace;
  }
  return BlockingPlan::kShift;
}

bool shift_blocking(EventExecutor* executor, UniqueFunction<void()>& job, WorkStealingPool*& pool) {
  const auto& role = t_thread_role;
  WorkStealingPool* wsp = role.role == ThreadRole::kWorker && role.pool == executor
                              ? role.pool
                              : dynamic_cast<WorkStealingPool*>(executor);
  BlockerCache& cache = wsp ? wsp->blocker_cache() : default_blocker_cache();
  pool = wsp;
  if (wsp) wsp->begin_outstanding_blocking();
  if (cache.run(job)) return true;
  if (wsp) wsp->end_outstanding_blocking();
  pool = nullptr;
  return false;
}

void end_shift(WorkStealingPool* pool) noexcept {
  if (pool) pool->end_outstanding_blocking();
}

void enter_blocking_section() {
  auto& role = t_thread_role;
  if (role.role == ThreadRole::kWorker && role.pool->in_place_blocking()) {
    role.pool->hand_off_worker_role();
  }
}

}  // namespace detail

namespace {

// What configure_default_blocker_cache() set, and whether the cache was made with it already.
struct DefaultCacheSettings {
  std::mutex mutex;
  BlockerCacheSettings settings;
  bool created = false;
};

DefaultCacheSettings& default_cache_settings() {
  static auto* settings = new DefaultCacheSettings();  // never destroyed, as the cache
  return *settings;
}

}  // namespace

detail::BlockerCache& default_blocker_cache() {
  // Never destroyed: blocking() may run during static destruction, and idle threads just park.
  static auto* cache = [] {
    auto& config = default_cache_settings();
    std::lock_guard lock(config.mutex);
    config.created = true;
    detail::BlockerCache::Options options;
    options.keep_alive = config.settings.keep_alive;
    options.max_threads = config.settings.max_threads;
    auto* made = new detail::BlockerCache(std::move(options));
    // The cache outlives main; threads whose keep-alive ran out are joined at exit rather than
    // left finished and unjoined (a thread leak to ThreadSanitizer).
    std::atexit([] { default_blocker_cache().join_exited(); });
    return made;
  }();
  return *cache;
}

void configure_default_blocker_cache(const BlockerCacheSettings& settings) {
  if (settings.max_threads == 0) {
    throw InvalidArgumentError("the default blocker cache needs at least one thread");
  }
  if (settings.keep_alive.count() < 0) {
    throw InvalidArgumentError("the default blocker cache's keep-alive cannot be negative");
  }
  auto& config = default_cache_settings();
  std::lock_guard lock(config.mutex);
  if (config.created) {
    throw IllegalStateError(
        "the default blocker cache is in use already: configure it before its first use");
  }
  config.settings = settings;
}

}  // namespace trellis
