// PooledByteBufAllocator: size-classed blocks (64 B .. 64 KiB) recycled through per-thread caches,
// so a steady allocate/free cycle on one thread touches neither the heap nor a shared lock.
#pragma once

#include <trellis/pipeline/byte_buf_allocator.hpp>

#include <cstddef>

namespace trellis {

namespace detail {
struct BufferPool;
}  // namespace detail

/// Size-classed blocks (64 B .. 64 KiB) recycled through per-thread caches.
///
/// Each thread that allocates gets its own cache of free blocks per size class (bounded in count
/// and bytes per class, and in bytes over all classes: see Options). A block freed on its
/// allocating thread goes back to that thread's cache; freed on another thread, it is pushed onto
/// the owner's lock-free remote-free list, which the owner drains on its next allocation. When a
/// thread exits, its cache frees its blocks and later frees of its buffers go straight to the heap;
/// the empty cache is reused by the next new thread. Requests above kMaxSizeClass are plain heap
/// allocations (still counted).
///
/// Threading: thread-safe; a buffer may be freed on any thread.
class PooledByteBufAllocator final : public ByteBufAllocator {
 public:
  /// The smallest block size; smaller requests get a block of this size.
  static constexpr std::size_t kMinSizeClass = 64;
  /// The largest pooled block size; larger requests are plain heap allocations.
  static constexpr std::size_t kMaxSizeClass = 64 * 1024;
  /// Size classes: the powers of two from kMinSizeClass to kMaxSizeClass.
  static constexpr std::size_t kNumSizeClasses = 11;
  /// A thread keeps caches for at most this many pooled allocators; past it, allocations of
  /// further allocators bypass the cache.
  static constexpr std::size_t kMaxThreadCachesPerThread = 8;

  /// Bounds of one thread cache: a freed block is kept while all three hold, else it goes back
  /// to the heap. The defaults keep a working set of up to 64 blocks of the largest class (64
  /// in-flight reads of 64 KiB, e.g. a few AsyncChannel consumers at their high watermark) off
  /// the heap, while one thread never keeps more than 8 MiB of free blocks per allocator.
  struct Options {
    /// Free blocks a thread cache keeps per size class.
    std::size_t max_cached_blocks_per_class = 256;
    /// Bytes of free blocks a thread cache keeps per size class.
    std::size_t max_cached_bytes_per_class = std::size_t{4} << 20;
    /// Bytes of free blocks a thread cache keeps over all its size classes.
    std::size_t max_cached_bytes = std::size_t{8} << 20;
  };

  /// An allocator with the default Options.
  PooledByteBufAllocator();
  /// An allocator with these cache bounds.
  explicit PooledByteBufAllocator(const Options& options);
  /// Frees the calling thread's cache for this allocator. Buffers should all be gone by now: if
  /// some are still alive, the pool is deliberately leaked (and an error logged) so that their
  /// later frees stay safe.
  ~PooledByteBufAllocator() override;

  /// A snapshot of the counters (cache counters included).
  ByteBufAllocatorStats stats() const override;

  /// Frees the blocks cached by the calling thread for this allocator (including those other
  /// threads freed to it).
  void trim_thread_cache();

 protected:
  /// Internal: a block from the calling thread's cache, or from the heap.
  detail::ByteBufStorage* allocate_storage(std::size_t capacity) override;

 private:
  detail::BufferPool* pool_;
};

}  // namespace trellis
