// Counts heap allocations made through operator new, for allocation budgets in tests and
// allocations-per-operation counters in benchmarks. The counting operator new lives in the
// object library trellis::allocation_hook; link it into a binary to turn counting on.
#pragma once

#include <cstdint>

namespace trellis::testing {

/// Allocations made by the calling thread since it started (0 when the hook is not linked).
std::uint64_t thread_allocations() noexcept;
/// Allocations made by all threads of the process.
std::uint64_t total_allocations() noexcept;
/// True when the counting operator new is linked into this binary.
bool allocation_hook_installed() noexcept;

/// Counts the allocations of the calling thread between construction and count().
class AllocationScope {
 public:
  /// Starts counting.
  AllocationScope() noexcept : start_(thread_allocations()) {}
  /// Allocations of the calling thread since construction.
  std::uint64_t count() const noexcept { return thread_allocations() - start_; }

 private:
  std::uint64_t start_;
};

}  // namespace trellis::testing
