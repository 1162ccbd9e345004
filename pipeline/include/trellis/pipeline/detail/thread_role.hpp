// What the calling thread is to trellis's blocking support: a WorkStealingPool worker (must not
// block), a blocker thread (may block), or any other thread. blocking() reads it on every call.
#pragma once

#include <cstdint>

#include <trellis/pipeline/unique_function.hpp>

namespace trellis {
class WorkStealingPool;
}

namespace trellis::detail {

enum class ThreadRole : std::uint8_t {
  kOther = 0,    // not a trellis pool thread (an event loop, main, a user thread)
  kWorker = 1,   // holds a worker slot of `pool`: blocking here first hands the slot off
  kBlocker = 2,  // a blocker thread, or a worker that handed its slot off: it may block
};

struct ThreadRoleState {
  ThreadRole role = ThreadRole::kOther;
  WorkStealingPool* pool = nullptr;  // with kWorker: the pool whose slot the thread holds
  void* slot = nullptr;              // with kWorker: the slot (WorkStealingPool's worker)
};

// constinit lets every use read the variable directly (no TLS wrapper call): the nested
// blocking-section check is this one load.
extern thread_local constinit ThreadRoleState t_thread_role;

inline bool thread_may_block() noexcept { return t_thread_role.role == ThreadRole::kBlocker; }

// On a blocker thread that runs a BlockerCache job, the last thing the job does before it ends
// (resume the task it blocked for, re-queue or complete the task it ran in place) may wait until
// the thread is back among the cache's idle threads: then the work it hands over finds this very
// thread reusable instead of starting a new one. Takes action and returns true there; returns
// false (action untouched, the caller runs it now) on any other thread or when one is kept.
bool defer_until_idle(UniqueFunction<void()>& action) noexcept;
// Runs the action kept by defer_until_idle now (a worker that took its role back stays busy).
void run_deferred_until_idle() noexcept;

}  // namespace trellis::detail
