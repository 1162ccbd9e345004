// default_executor() and its provider (see default_executor.hpp).
#include <trellis/pipeline/default_executor.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>

#include <trellis/pipeline/thread_pool_executor.hpp>

namespace trellis {

namespace {

// One word of state: 0 while nothing was asked, kPoolUsed once the pool was handed out, else
// the installed provider. The pool's first use and an install race on one compare-and-swap.
constexpr std::uintptr_t kPoolUsed = 1;
std::atomic<std::uintptr_t> g_state{0};

EventExecutor& pool() {
  static auto* pool = new ThreadPoolExecutor(
      std::max<std::size_t>(2, std::thread::hardware_concurrency()), "trellis-default");
  return *pool;
}

}  // namespace

EventExecutor& default_executor() {
  std::uintptr_t state = g_state.load(std::memory_order_acquire);
  if (state == 0 && !g_state.compare_exchange_strong(state, kPoolUsed, std::memory_order_acq_rel)) {
    // Lost to an install (or to another first use): state holds what won.
  }
  if (state > kPoolUsed) return reinterpret_cast<DefaultExecutorProvider*>(state)->executor();
  return pool();
}

bool install_default_executor_provider(DefaultExecutorProvider& provider) noexcept {
  std::uintptr_t expected = 0;
  return g_state.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(&provider),
                                         std::memory_order_acq_rel);
}

bool uninstall_default_executor_provider(DefaultExecutorProvider& provider) noexcept {
  // Back to "nothing asked yet": the pool was never handed out while the provider was
  // installed, so another provider may be installed after this one.
  std::uintptr_t expected = reinterpret_cast<std::uintptr_t>(&provider);
  return g_state.compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
}

}  // namespace trellis
