#include <trellis/pipeline/pooled_byte_buf_allocator.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <mutex>
#include <new>
#include <utility>

namespace trellis {

namespace detail {

namespace {

constexpr std::size_t kNumClasses = PooledByteBufAllocator::kNumSizeClasses;
constexpr unsigned kMinClassShift = 6;
static_assert(std::size_t{1} << kMinClassShift == PooledByteBufAllocator::kMinSizeClass);
static_assert(PooledByteBufAllocator::kMinSizeClass << (kNumClasses - 1) ==
              PooledByteBufAllocator::kMaxSizeClass);

// The remote-free list head of a cache whose thread has exited: frees go straight to the heap.
constexpr std::uintptr_t kClosed = 1;

constexpr std::size_t class_of_request(std::size_t capacity) noexcept {
  return capacity <= PooledByteBufAllocator::kMinSizeClass
             ? 0
             : static_cast<std::size_t>(std::bit_width(capacity - 1)) - kMinClassShift;
}
constexpr std::size_t class_of_block(std::size_t block_capacity) noexcept {
  return static_cast<std::size_t>(std::countr_zero(block_capacity)) - kMinClassShift;
}
constexpr std::size_t class_size(std::size_t class_index) noexcept {
  return PooledByteBufAllocator::kMinSizeClass << class_index;
}

ByteBufStorage* new_storage(std::size_t capacity, const ByteBufStorageOps* ops, void* owner) {
  void* memory = ::operator new(sizeof(ByteBufStorage) + capacity);
  return ::new (memory) ByteBufStorage(static_cast<std::uint32_t>(capacity), ops, owner);
}

void delete_storage(ByteBufStorage* storage) noexcept {
  storage->~ByteBufStorage();
  ::operator delete(static_cast<void*>(storage));
}

// A counter only one thread writes (so no atomic read-modify-write) and any thread may read.
class OwnerCounter {
 public:
  void add(std::uint64_t n) noexcept {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void sub(std::uint64_t n) noexcept {
    value_.store(value_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
  }
  std::uint64_t get() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

void release_cached(ByteBufStorage* storage) noexcept;
void release_direct(ByteBufStorage* storage) noexcept;
ByteBufStorage* allocate_like_cached(const ByteBufStorage& like, std::size_t capacity);
ByteBufStorage* allocate_like_direct(const ByteBufStorage& like, std::size_t capacity);

// Blocks of a size class; owner is the ThreadCache that allocated them.
constexpr ByteBufStorageOps kCachedOps{&release_cached, &allocate_like_cached};
// Blocks too large for a class (or allocated without a cache); owner is the BufferPool.
constexpr ByteBufStorageOps kDirectOps{&release_direct, &allocate_like_direct};

}  // namespace

struct BufferPool;

// One thread's free blocks of one pool. The owner thread alone touches the free lists; other
// threads only push onto remote_head. The cache object lives as long as its pool (blocks point to
// it); when its thread exits it is closed, and a new thread may reopen it.
struct ThreadCache {
  explicit ThreadCache(BufferPool* owner_pool) noexcept : pool(owner_pool) {}

  // A block of the class from the free list, or null when it is empty or blocks freed by other
  // threads wait to be taken back (allocate() does that): the inlined fast path.
  ByteBufStorage* try_pop(std::size_t class_index) noexcept {
    ByteBufStorage* storage = free_lists[class_index];
    if (storage == nullptr || remote_head.load(std::memory_order_relaxed) != 0) return nullptr;
    const std::size_t size = class_size(class_index);
    free_lists[class_index] = storage->next;
    --free_counts[class_index];
    free_bytes -= size;
    storage->next = nullptr;
    storage->refs.store(1, std::memory_order_relaxed);
    cached.sub(1);
    allocated.add(1);
    allocated_bytes.add(size);
    return storage;
  }
  // Any block of the class: try_pop after taking back remote frees, else a new one.
  [[gnu::noinline]] ByteBufStorage* allocate(std::size_t class_index);
  [[gnu::always_inline]] inline void free_local(ByteBufStorage* storage) noexcept;
  void free_remote(ByteBufStorage* storage) noexcept;
  void drain_remote() noexcept;
  void free_cached_blocks() noexcept;
  [[gnu::always_inline]] inline void keep_or_delete(ByteBufStorage* storage) noexcept;

  BufferPool* const pool;
  ThreadCache* next_in_pool = nullptr;  // guarded by pool->mutex
  bool open = true;                     // guarded by pool->mutex

  std::array<ByteBufStorage*, kNumClasses> free_lists{};
  std::array<std::uint32_t, kNumClasses> free_counts{};
  std::size_t free_bytes = 0;  // of all free lists

  OwnerCounter allocated;
  OwnerCounter allocated_bytes;
  OwnerCounter freed;  // by the owner; frees by other threads are counted by the pool
  OwnerCounter freed_bytes;
  OwnerCounter misses;  // allocations the free lists could not serve (hits: allocated - misses)
  OwnerCounter cached;

  // An intrusive MPSC stack (Treiber push, whole-list exchange pop), or kClosed.
  alignas(64) std::atomic<std::uintptr_t> remote_head{0};
};

// The shared part of a PooledByteBufAllocator. Reference counted by the allocator and by each
// thread that has an open cache in it, so it outlives whichever of them goes last.
struct BufferPool {
  explicit BufferPool(const PooledByteBufAllocator::Options& options)
      : max_total_bytes(options.max_cached_bytes) {
    for (std::size_t i = 0; i < kNumClasses; ++i) {
      max_blocks[i] = static_cast<std::uint32_t>(std::min<std::size_t>(
          {options.max_cached_blocks_per_class, options.max_cached_bytes_per_class / class_size(i),
           std::size_t{UINT32_MAX}}));
    }
  }
  ~BufferPool() {
    while (caches != nullptr) delete std::exchange(caches, caches->next_in_pool);
  }

  ByteBufStorage* allocate(std::size_t capacity);
  ByteBufStorage* allocate_direct(std::size_t capacity);
  // A cache for the calling thread: a closed one reopened, or a new one.
  ThreadCache* open_cache();
  // On the cache's thread: frees its blocks and marks it closed.
  void close_cache(ThreadCache* cache) noexcept;
  void unref() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  std::array<std::uint32_t, kNumClasses> max_blocks{};
  const std::size_t max_total_bytes;
  std::atomic<std::size_t> refs{1};
  std::atomic<bool> retired{false};  // its allocator is gone: threads drop their caches

  mutable std::mutex mutex;
  ThreadCache* caches = nullptr;  // guarded by mutex
  std::uint64_t caches_created = 0;

  std::atomic<std::uint64_t> direct_allocated{0};
  std::atomic<std::uint64_t> direct_allocated_bytes{0};
  std::atomic<std::uint64_t> direct_freed{0};
  std::atomic<std::uint64_t> direct_freed_bytes{0};
  std::atomic<std::uint64_t> remote_freed{0};
  std::atomic<std::uint64_t> remote_freed_bytes{0};
};

void ThreadCache::keep_or_delete(ByteBufStorage* storage) noexcept {
  const std::size_t class_index = class_of_block(storage->capacity);
  if (free_counts[class_index] < pool->max_blocks[class_index] &&
      free_bytes + storage->capacity <= pool->max_total_bytes) {
    storage->next = free_lists[class_index];
    free_lists[class_index] = storage;
    ++free_counts[class_index];
    free_bytes += storage->capacity;
    cached.add(1);
  } else {
    delete_storage(storage);
  }
}

void ThreadCache::free_local(ByteBufStorage* storage) noexcept {
  freed.add(1);
  freed_bytes.add(storage->capacity);
  keep_or_delete(storage);
}

namespace {

// The caches of the calling thread, one per pool it allocated from. Its destructor runs at
// thread exit and closes them.
class ThreadCaches {
 public:
  constexpr ThreadCaches() noexcept = default;
  ThreadCaches(const ThreadCaches&) = delete;
  ThreadCaches& operator=(const ThreadCaches&) = delete;
  ~ThreadCaches();

  ThreadCache* find(const BufferPool* pool) const noexcept {
    for (std::size_t i = 0; i < size_; ++i) {
      if (slots_[i].pool == pool) return slots_[i].cache;
    }
    return nullptr;
  }
  bool owns(const ThreadCache* cache) const noexcept {
    for (std::size_t i = 0; i < size_; ++i) {
      if (slots_[i].cache == cache) return true;
    }
    return false;
  }
  // Opens a cache of `pool` for this thread; nullptr if the thread has no free slot.
  ThreadCache* attach(BufferPool* pool);
  void detach(BufferPool* pool) noexcept;

 private:
  struct Slot {
    BufferPool* pool = nullptr;
    ThreadCache* cache = nullptr;
  };
  void drop(std::size_t i) noexcept;

  std::array<Slot, PooledByteBufAllocator::kMaxThreadCachesPerThread> slots_{};
  std::size_t size_ = 0;
};

// Set when this thread's ThreadCaches is destroyed (trivially destructible, so always readable).
thread_local constinit bool t_caches_gone = false;
thread_local ThreadCaches t_caches;
// The pool this thread allocated from last and its cache there, or null: most allocations and
// local frees find their cache here, without the lookup in t_caches (whose non-trivial
// destructor also costs a TLS guard call per access). Cleared when that cache is dropped.
thread_local constinit BufferPool* t_last_pool = nullptr;
thread_local constinit ThreadCache* t_last_cache = nullptr;

ThreadCaches::~ThreadCaches() {
  t_caches_gone = true;
  while (size_ != 0) drop(size_ - 1);
}

void ThreadCaches::drop(std::size_t i) noexcept {
  const Slot slot = slots_[i];
  if (slot.cache == t_last_cache) {
    t_last_pool = nullptr;
    t_last_cache = nullptr;
  }
  slots_[i] = slots_[--size_];
  slots_[size_] = Slot{};
  slot.pool->close_cache(slot.cache);
  slot.pool->unref();
}

ThreadCache* ThreadCaches::attach(BufferPool* pool) {
  for (std::size_t i = size_; i-- > 0;) {
    if (slots_[i].pool->retired.load(std::memory_order_acquire)) drop(i);
  }
  if (size_ == slots_.size()) return nullptr;
  ThreadCache* cache = pool->open_cache();
  slots_[size_++] = Slot{pool, cache};
  return cache;
}

void ThreadCaches::detach(BufferPool* pool) noexcept {
  for (std::size_t i = 0; i < size_; ++i) {
    if (slots_[i].pool == pool) {
      drop(i);
      return;
    }
  }
}

void release_cached(ByteBufStorage* storage) noexcept {
  auto* cache = static_cast<ThreadCache*>(storage->owner);
  if (cache == t_last_cache) {  // never null here: a block's owner is a cache
    cache->free_local(storage);
    return;
  }
  if (!t_caches_gone && t_caches.owns(cache)) {
    cache->free_local(storage);
  } else {
    cache->free_remote(storage);
  }
}

void release_direct(ByteBufStorage* storage) noexcept {
  auto* pool = static_cast<BufferPool*>(storage->owner);
  const std::uint32_t capacity = storage->capacity;
  delete_storage(storage);
  pool->direct_freed_bytes.fetch_add(capacity, std::memory_order_relaxed);
  pool->direct_freed.fetch_add(1, std::memory_order_release);
}

ByteBufStorage* allocate_like_cached(const ByteBufStorage& like, std::size_t capacity) {
  return static_cast<ThreadCache*>(like.owner)->pool->allocate(capacity);
}

ByteBufStorage* allocate_like_direct(const ByteBufStorage& like, std::size_t capacity) {
  return static_cast<BufferPool*>(like.owner)->allocate(capacity);
}

}  // namespace

ByteBufStorage* ThreadCache::allocate(std::size_t class_index) {
  if (remote_head.load(std::memory_order_relaxed) != 0) drain_remote();
  if (ByteBufStorage* storage = try_pop(class_index)) return storage;
  const std::size_t size = class_size(class_index);
  ByteBufStorage* storage = new_storage(size, &kCachedOps, this);
  misses.add(1);
  allocated.add(1);
  allocated_bytes.add(size);
  return storage;
}

void ThreadCache::free_remote(ByteBufStorage* storage) noexcept {
  // Count only after the block is handed over, and touch nothing of the cache afterwards: until
  // the count drops, the allocator's destructor sees this buffer as live and keeps the pool.
  BufferPool* const owner_pool = pool;
  const std::uint32_t capacity = storage->capacity;
  std::uintptr_t head = remote_head.load(std::memory_order_relaxed);
  for (;;) {
    if (head == kClosed) {
      delete_storage(storage);
      break;
    }
    storage->next = reinterpret_cast<ByteBufStorage*>(head);
    if (remote_head.compare_exchange_weak(head, reinterpret_cast<std::uintptr_t>(storage),
                                          std::memory_order_release, std::memory_order_relaxed)) {
      break;
    }
  }
  owner_pool->remote_freed_bytes.fetch_add(capacity, std::memory_order_relaxed);
  owner_pool->remote_freed.fetch_add(1, std::memory_order_release);
}

void ThreadCache::drain_remote() noexcept {
  std::uintptr_t head = remote_head.exchange(0, std::memory_order_acquire);
  while (head != 0) {
    auto* storage = reinterpret_cast<ByteBufStorage*>(head);
    head = reinterpret_cast<std::uintptr_t>(storage->next);
    keep_or_delete(storage);
  }
}

void ThreadCache::free_cached_blocks() noexcept {
  for (std::size_t i = 0; i < kNumClasses; ++i) {
    ByteBufStorage* storage = std::exchange(free_lists[i], nullptr);
    while (storage != nullptr) delete_storage(std::exchange(storage, storage->next));
    free_counts[i] = 0;
  }
  free_bytes = 0;
  cached.sub(cached.get());
}

ByteBufStorage* BufferPool::allocate(std::size_t capacity) {
  if (capacity > PooledByteBufAllocator::kMaxSizeClass) return allocate_direct(capacity);
  if (this == t_last_pool) return t_last_cache->allocate(class_of_request(capacity));
  if (t_caches_gone) return allocate_direct(capacity);
  ThreadCache* cache = t_caches.find(this);
  if (cache == nullptr) {
    cache = t_caches.attach(this);
    if (cache == nullptr) return allocate_direct(capacity);
  }
  t_last_pool = this;
  t_last_cache = cache;
  return cache->allocate(class_of_request(capacity));
}

ByteBufStorage* BufferPool::allocate_direct(std::size_t capacity) {
  ByteBufStorage* storage = new_storage(capacity, &kDirectOps, this);
  direct_allocated_bytes.fetch_add(capacity, std::memory_order_relaxed);
  direct_allocated.fetch_add(1, std::memory_order_relaxed);
  return storage;
}

ThreadCache* BufferPool::open_cache() {
  std::lock_guard lock(mutex);
  ThreadCache* cache = caches;
  while (cache != nullptr && cache->open) cache = cache->next_in_pool;
  if (cache != nullptr) {
    cache->open = true;
    cache->remote_head.store(0, std::memory_order_release);
  } else {
    cache = new ThreadCache(this);
    cache->next_in_pool = caches;
    caches = cache;
    ++caches_created;
  }
  refs.fetch_add(1, std::memory_order_relaxed);
  return cache;
}

void BufferPool::close_cache(ThreadCache* cache) noexcept {
  cache->free_cached_blocks();
  std::uintptr_t head = cache->remote_head.exchange(kClosed, std::memory_order_acq_rel);
  while (head != 0) {
    auto* storage = reinterpret_cast<ByteBufStorage*>(head);
    head = reinterpret_cast<std::uintptr_t>(storage->next);
    delete_storage(storage);
  }
  std::lock_guard lock(mutex);
  cache->open = false;
}

}  // namespace detail

PooledByteBufAllocator::PooledByteBufAllocator() : PooledByteBufAllocator(Options{}) {}

PooledByteBufAllocator::PooledByteBufAllocator(const Options& options)
    : pool_(new detail::BufferPool(options)) {}

PooledByteBufAllocator::~PooledByteBufAllocator() {
  if (!detail::t_caches_gone) detail::t_caches.detach(pool_);
  pool_->retired.store(true, std::memory_order_release);
  const ByteBufAllocatorStats s = stats();
  if (s.live_buffers != 0) {
    spdlog::error(
        "PooledByteBufAllocator destroyed with {} live buffers ({} bytes): leaking its pool so "
        "that they can still be freed",
        s.live_buffers, s.live_bytes);
    return;
  }
  pool_->unref();
}

ByteBufAllocatorStats PooledByteBufAllocator::stats() const {
  ByteBufAllocatorStats s;
  // Other threads keep counting while we read: frees are read first and the result is clamped,
  // so live counts never wrap (they are exact once the threads are synchronized with us).
  std::uint64_t freed = pool_->remote_freed.load(std::memory_order_acquire) +
                        pool_->direct_freed.load(std::memory_order_acquire);
  std::uint64_t freed_bytes = pool_->remote_freed_bytes.load(std::memory_order_relaxed) +
                              pool_->direct_freed_bytes.load(std::memory_order_relaxed);
  {
    std::lock_guard lock(pool_->mutex);
    for (const detail::ThreadCache* c = pool_->caches; c != nullptr; c = c->next_in_pool) {
      freed += c->freed.get();
      freed_bytes += c->freed_bytes.get();
      // Allocations count misses too; read while the owner counts (relaxed), so clamped.
      const std::uint64_t misses = c->misses.get();
      const std::uint64_t allocated = c->allocated.get();
      s.total_buffers += allocated;
      s.total_bytes += c->allocated_bytes.get();
      s.cache_hits += allocated >= misses ? allocated - misses : 0;
      s.cached_blocks += c->cached.get();
    }
    s.thread_caches = pool_->caches_created;
  }
  s.total_buffers += pool_->direct_allocated.load(std::memory_order_relaxed);
  s.total_bytes += pool_->direct_allocated_bytes.load(std::memory_order_relaxed);
  s.live_buffers = s.total_buffers >= freed ? s.total_buffers - freed : 0;
  s.live_bytes = s.total_bytes >= freed_bytes ? s.total_bytes - freed_bytes : 0;
  return s;
}

void PooledByteBufAllocator::trim_thread_cache() {
  if (detail::t_caches_gone) return;
  if (detail::ThreadCache* cache = detail::t_caches.find(pool_)) {
    cache->drain_remote();
    cache->free_cached_blocks();
  }
}

detail::ByteBufStorage* PooledByteBufAllocator::allocate_storage(std::size_t capacity) {
  // The usual case inline: the pool this thread used last, a size class, a free block.
  if (pool_ == detail::t_last_pool && capacity <= kMaxSizeClass) {
    if (auto* storage = detail::t_last_cache->try_pop(detail::class_of_request(capacity))) {
      return storage;
    }
  }
  return pool_->allocate(capacity);
}

}  // namespace trellis
