#include <trellis/pipeline/unpooled_byte_buf_allocator.hpp>

#include <atomic>
#include <new>

namespace trellis {

namespace detail {

struct UnpooledCounters {
  std::atomic<std::uint64_t> refs{1};  // the allocator + one per live buffer
  std::atomic<std::uint64_t> allocated{0};
  std::atomic<std::uint64_t> allocated_bytes{0};
  std::atomic<std::uint64_t> freed{0};
  std::atomic<std::uint64_t> freed_bytes{0};

  void unref() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
};

}  // namespace detail

namespace {

using detail::ByteBufStorage;
using detail::UnpooledCounters;

ByteBufStorage* allocate_unpooled(UnpooledCounters* counters, std::size_t capacity);

void release_unpooled(ByteBufStorage* storage) noexcept {
  auto* counters = static_cast<UnpooledCounters*>(storage->owner);
  counters->freed.fetch_add(1, std::memory_order_relaxed);
  counters->freed_bytes.fetch_add(storage->capacity, std::memory_order_relaxed);
  storage->~ByteBufStorage();
  ::operator delete(static_cast<void*>(storage));
  counters->unref();
}

ByteBufStorage* allocate_unpooled_like(const ByteBufStorage& like, std::size_t capacity) {
  return allocate_unpooled(static_cast<UnpooledCounters*>(like.owner), capacity);
}

constexpr detail::ByteBufStorageOps kUnpooledOps{&release_unpooled, &allocate_unpooled_like};

ByteBufStorage* allocate_unpooled(UnpooledCounters* counters, std::size_t capacity) {
  void* memory = ::operator new(sizeof(ByteBufStorage) + capacity);
  counters->refs.fetch_add(1, std::memory_order_relaxed);
  counters->allocated.fetch_add(1, std::memory_order_relaxed);
  counters->allocated_bytes.fetch_add(capacity, std::memory_order_relaxed);
  return ::new (memory)
      ByteBufStorage(static_cast<std::uint32_t>(capacity), &kUnpooledOps, counters);
}

}  // namespace

UnpooledByteBufAllocator::UnpooledByteBufAllocator() : counters_(new UnpooledCounters()) {}

UnpooledByteBufAllocator::~UnpooledByteBufAllocator() { counters_->unref(); }

ByteBufAllocatorStats UnpooledByteBufAllocator::stats() const {
  ByteBufAllocatorStats s;
  // Read one by one while other threads count: frees first, and clamp, so live never wraps.
  const std::uint64_t freed = counters_->freed.load(std::memory_order_acquire);
  const std::uint64_t freed_bytes = counters_->freed_bytes.load(std::memory_order_acquire);
  s.total_buffers = counters_->allocated.load(std::memory_order_acquire);
  s.total_bytes = counters_->allocated_bytes.load(std::memory_order_acquire);
  s.live_buffers = s.total_buffers >= freed ? s.total_buffers - freed : 0;
  s.live_bytes = s.total_bytes >= freed_bytes ? s.total_bytes - freed_bytes : 0;
  return s;
}

ByteBufStorage* UnpooledByteBufAllocator::allocate_storage(std::size_t capacity) {
  return allocate_unpooled(counters_, capacity);
}

}  // namespace trellis
