// Blocking sections: the per-thread role and the paths blocking() takes (see blocking.hpp).
#include <trellis/pipeline/blocking.hpp>

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

detail::BlockerCache& default_blocker_cache() {
  // Never destroyed: blocking() may run during static destruction, and idle threads just park.
  static auto* cache = new detail::BlockerCache(detail::BlockerCache::Options{});
  return *cache;
}

}  // namespace trellis
