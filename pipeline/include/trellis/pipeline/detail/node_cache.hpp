// A per-thread cache of fixed-size memory blocks for small, short-lived framework objects
// (scheduled-task nodes): after warm-up, creating and dropping one costs no heap allocation.
// Blocks freed on another thread join that thread's cache. Disabled under AddressSanitizer so
// that use-after-free stays detectable.
#pragma once

#include <cstddef>
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

template <std::size_t Size>
class NodeCache {
 public:
  // At most this many free blocks are kept per thread (as Netty's Recycler does by default).
  static constexpr std::size_t kMaxCached = 4096;

  static void* allocate() {
#if TRELLIS_NODE_CACHE_ENABLED
    State& state = t_state;
    if (FreeBlock* block = state.head) {
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
    if (state.count < kMaxCached && !state.dead) {
      if (!state.reaper_registered) register_reaper();
      state.head = ::new (p) FreeBlock{state.head};
      ++state.count;
      return;
    }
#endif
    ::operator delete(p);
  }

 private:
  static_assert(Size >= sizeof(void*));
  struct FreeBlock {
    FreeBlock* next;
  };
  // Trivially destructible and constant-initialised, so the hot paths reach it without a TLS
  // guard call; the blocks are freed at thread exit by a Reaper, registered with the first block.
  struct State {
    FreeBlock* head = nullptr;
    std::size_t count = 0;
    bool reaper_registered = false;
    bool dead = false;  // the thread is exiting: blocks released later go straight to the heap
  };
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
