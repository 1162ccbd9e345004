// UnpooledByteBufAllocator: every buffer is one fresh heap allocation (header and data together),
// freed when its last handle goes away. Simple, and the baseline the pooled allocator beats.
#pragma once

#include <trellis/pipeline/byte_buf_allocator.hpp>

namespace trellis {

namespace detail {
struct UnpooledCounters;
}  // namespace detail

/// Every buffer is one fresh heap allocation (header and data together), freed when its last
/// handle goes away. Buffers may outlive the allocator.
///
/// Threading: thread-safe, like every ByteBufAllocator.
class UnpooledByteBufAllocator final : public ByteBufAllocator {
 public:
  /// An allocator with zeroed counters.
  UnpooledByteBufAllocator();
  /// Lets go of the counters (freed once the last buffer is gone too).
  ~UnpooledByteBufAllocator() override;

  /// A snapshot of the counters (the pooled-only ones stay 0).
  ByteBufAllocatorStats stats() const override;

 protected:
  /// Internal: a new heap allocation of the header and `capacity` bytes.
  detail::ByteBufStorage* allocate_storage(std::size_t capacity) override;

 private:
  // Reference counted by the allocator and by each live buffer, so a buffer that outlives the
  // allocator still frees safely.
  detail::UnpooledCounters* counters_;
};

}  // namespace trellis
