// What the calling thread is to trellis's blocking support: a WorkStealingPool worker (must not
// block), a blocker thread (may block), or any other thread. blocking() reads it on every call.
#pragma once

#include <cstdint>

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

}  // namespace trellis::detail
