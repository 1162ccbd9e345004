// A pool of fixed-size memory blocks for small, short-lived framework objects (scheduled-task
// nodes, message boxes): after warm-up, creating and dropping one costs no heap allocation.
// Each thread keeps a free list of its own; a thread that frees more than it keeps hands whole
// batches to a process-wide depot, where a thread that runs dry takes them from. So blocks
// allocated on one thread and freed on another (a task scheduled from outside a loop and
// dropped on it) come back without the heap, at one lock per batch. The depot keeps at most
// kMaxDepotBytes of free blocks, all block sizes together; beyond that they go back to the heap,
// so a burst does not leave the process holding its peak. Disabled under AddressSanitizer so
// that use-after-free stays detectable.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define TRELLIS_NODE_CACHE_ENABLED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRELLIS_NODE_CACHE_ENABLED 0
#endif
#endif
#ifndef TRELLIS_NODE_CACHE_ENABLED
#define TRELLIS_NODE_CACHE_ENABLED 1
#endif

namespace trellis::detail {

// The depot's limit, for all block sizes together: free blocks beyond it go back to the heap.
inline constexpr std::size_t kMaxDepotBytes = std::size_t{64} << 20;
// Bytes of free blocks in the depot, all block sizes together (changed under each size's lock).
inline std::atomic<std::size_t> g_depot_bytes{0};

// Bytes of free blocks the depot keeps now, all sizes together (diagnostics and tests).
inline std::size_t node_depot_bytes() noexcept {
  return g_depot_bytes.load(std::memory_order_relaxed);
}

template <std::size_t Size>
class NodeCache {
 public:
  // At most this many free blocks are kept per thread: 4096 (as Netty's Recycler does by
  // default) up to 512-byte blocks, and no more than 2 MiB of bigger ones.
  static constexpr std::size_t kMaxCached = Size <= 512 ? 4096 : (std::size_t{2} << 20) / Size;
  // Blocks move between a thread and the depot this many at a time.
  static constexpr std::size_t kBatch = kMaxCached >= 1024 ? 256 : kMaxCached / 4;
  static_assert(kBatch >= 1, "blocks this big do not belong in a node cache");

  static void* allocate() {
#if TRELLIS_NODE_CACHE_ENABLED
    State& state = t_state;
    if (FreeBlock* block = state.head) [[likely]] {
      state.head = block->next;
      --state.count;
      return block;
    }
    if (refill(state)) {
      FreeBlock* block = state.head;
      state.head = block->next;
      --state.count;
      return block;
    }
#endif
    return ::operator new(Size);
  }

  static void deallocate(void* p) noexcept {
#if TRELLIS_NODE_CACHE_ENABLED
    State& state = t_state;
    if (state.count < kMaxCached && !state.dead) [[likely]] {
      if (!state.reaper_registered) [[unlikely]]
        register_reaper();
      state.head = ::new (p) FreeBlock{state.head, nullptr};
      ++state.count;
      return;
    }
    if (!state.dead && spill(state, p)) return;
#endif
    ::operator delete(p);
  }

 private:
  static_assert(Size >= 2 * sizeof(void*));
  struct FreeBlock {
    FreeBlock* next;
    FreeBlock* next_batch;  // in the depot: the first block of the next batch
  };
  // Trivially destructible and constant-initialised, so the hot paths reach it without a TLS
  // guard call; the blocks are freed at thread exit by a Reaper, registered with the first block.
  struct State {
    FreeBlock* head = nullptr;
    std::size_t count = 0;
    bool reaper_registered = false;
    bool dead = false;  // the thread is exiting: blocks released later go straight to the heap
  };
  // Full batches of kBatch blocks, linked through their first blocks. Never destroyed: threads
  // may free blocks into it while the process exits.
  struct Depot {
    std::mutex mutex;
    FreeBlock* batches = nullptr;
    std::size_t blocks = 0;
  };
  static Depot& depot() noexcept {
    static Depot* d = new Depot;
    return *d;
  }

  // Takes a batch from the depot into the (empty) thread cache.
  [[gnu::noinline]] static bool refill(State& state) noexcept {
    Depot& d = depot();
    std::lock_guard lock(d.mutex);
    FreeBlock* batch = d.batches;
    if (!batch) return false;
    d.batches = batch->next_batch;
    d.blocks -= kBatch;
    g_depot_bytes.fetch_sub(kBatch * Size, std::memory_order_relaxed);
    state.head = batch;
    state.count = kBatch;
    return true;
  }

  // The thread cache is full: moves its newest kBatch blocks, with p on top, to the depot.
  [[gnu::noinline]] static bool spill(State& state, void* p) noexcept {
    auto* first = ::new (p) FreeBlock{state.head, nullptr};
    FreeBlock* last = first;
    for (std::size_t i = 1; i < kBatch; ++i) last = last->next;
    Depot& d = depot();
    {
      std::lock_guard lock(d.mutex);
      constexpr std::size_t kBytes = kBatch * Size;
      if (g_depot_bytes.fetch_add(kBytes, std::memory_order_relaxed) + kBytes > kMaxDepotBytes) {
        g_depot_bytes.fetch_sub(kBytes, std::memory_order_relaxed);
        return false;
      }
      first->next_batch = d.batches;
      d.batches = first;
      d.blocks += kBatch;
    }
    state.head = last->next;
    last->next = nullptr;
    state.count -= kBatch - 1;
    return true;
  }

  struct Reaper {
    ~Reaper() {
      State& state = t_state;
      state.dead = true;
      while (FreeBlock* block = state.head) {
        state.head = block->next;
        ::operator delete(block);
      }
      state.count = 0;
    }
  };
  [[gnu::noinline]] static void register_reaper() noexcept {
    static thread_local Reaper reaper;
    (void)reaper;
    t_state.reaper_registered = true;
  }
  static inline thread_local constinit State t_state{};
};

}  // namespace trellis::detail
