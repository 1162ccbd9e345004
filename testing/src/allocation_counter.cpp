// Weak fallbacks for the allocation counters when trellis::allocation_hook is not linked.
#include <trellis/testing/allocation_counter.hpp>

namespace trellis::testing {
[[gnu::weak]] std::uint64_t thread_allocations() noexcept { return 0; }
[[gnu::weak]] std::uint64_t total_allocations() noexcept { return 0; }
[[gnu::weak]] bool allocation_hook_installed() noexcept { return false; }
}  // namespace trellis::testing
