// UnpooledByteBufAllocator: every buffer is one fresh heap allocation (header and data together),
// freed when its last handle goes away. Simple, and the baseline the pooled allocator beats.
#pragma once

#include <trellis/pipeline/byte_buf_allocator.hpp>

namespace trellis {

namespace detail {
struct UnpooledCounters;
}  // namespace detail

class UnpooledByteBufAllocator final : public ByteBufAllocator {
 public:
  UnpooledByteBufAllocator();
  ~UnpooledByteBufAllocator() override;

  ByteBufAllocatorStats stats() const override;

 protected:
  detail::ByteBufStorage* allocate_storage(std::size_t capacity) override;

 private:
  // Reference counted by the allocator and by each live buffer, so a buffer that outlives the
  // allocator still frees safely.
  detail::UnpooledCounters* counters_;
};

}  // namespace trellis
