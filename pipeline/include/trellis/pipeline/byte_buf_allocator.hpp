// ByteBufAllocator: the interface every source of ByteBuf storage implements (pooled, unpooled),
// with the live and total counters that allocation tests and benchmarks read.
#pragma once

#include <trellis/pipeline/byte_buf.hpp>

#include <cstddef>
#include <cstdint>

namespace trellis {

/// Counters of an allocator. A "buffer" is one storage: shares and slices of it are not counted.
/// Bytes are storage capacities as allocated (after rounding up to a size class).
struct ByteBufAllocatorStats {
  /// Buffers allocated and not freed yet.
  std::uint64_t live_buffers = 0;
  /// Capacity of the live buffers.
  std::uint64_t live_bytes = 0;
  /// Buffers allocated since the allocator was made.
  std::uint64_t total_buffers = 0;
  /// Capacity of the buffers allocated since the allocator was made.
  std::uint64_t total_bytes = 0;
  /// Allocations served from a thread cache (pooled only).
  std::uint64_t cache_hits = 0;
  /// Free blocks waiting in thread caches (pooled only).
  std::uint64_t cached_blocks = 0;
  /// Thread caches created (pooled only).
  std::uint64_t thread_caches = 0;
};

/// Hands out ByteBufs. An allocator must outlive the buffers it made, except the default one,
/// which lives for the whole process.
///
/// Threading: allocators are thread-safe; buffers may be freed on any thread.
class ByteBufAllocator {
 public:
  /// The max capacity buffer() gives when none is named.
  static constexpr std::size_t kDefaultMaxCapacity = ByteBuf::kMaxCapacity;

  ByteBufAllocator() = default;
  ByteBufAllocator(const ByteBufAllocator&) = delete;
  ByteBufAllocator& operator=(const ByteBufAllocator&) = delete;
  virtual ~ByteBufAllocator() = default;

  /// An empty buffer (indexes 0) of capacity `initial_capacity` that grows up to `max_capacity`.
  /// Throws InvalidArgumentError if initial > max or max > kDefaultMaxCapacity.
  ByteBuf buffer(std::size_t initial_capacity, std::size_t max_capacity = kDefaultMaxCapacity);

  /// A snapshot of the counters.
  virtual ByteBufAllocatorStats stats() const = 0;

  /// The process-wide PooledByteBufAllocator. It is never destroyed, so buffers held by static
  /// objects stay valid until the very end.
  static ByteBufAllocator& default_allocator() noexcept;

 protected:
  /// Internal: a storage with reference count 1 and at least `capacity` bytes (capacity <=
  /// kMaxCapacity), for buffer() and for growing buffers.
  virtual detail::ByteBufStorage* allocate_storage(std::size_t capacity) = 0;
};

}  // namespace trellis
