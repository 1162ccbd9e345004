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
    if (!t_dead) {
      auto& list = t_list;
      if (list.head) {
        FreeBlock* block = list.head;
        list.head = block->next;
        --list.count;
        return block;
      }
    }
#endif
    return ::operator new(Size);
  }

  static void deallocate(void* p) noexcept {
#if TRELLIS_NODE_CACHE_ENABLED
    if (!t_dead) {
      auto& list = t_list;
      if (list.count < kMaxCached) {
        auto* block = ::new (p) FreeBlock{list.head};
        list.head = block;
        ++list.count;
        return;
      }
    }
#endif
    ::operator delete(p);
  }

 private:
  static_assert(Size >= sizeof(void*));
  struct FreeBlock {
    FreeBlock* next;
  };
  struct List {
    FreeBlock* head = nullptr;
    std::size_t count = 0;
    ~List() {
      t_dead = true;  // blocks released later on this thread go straight to the heap
      while (head) {
        FreeBlock* next = head->next;
        ::operator delete(head);
        head = next;
      }
    }
  };
  static inline thread_local List t_list;
  static inline thread_local bool t_dead = false;
};

}  // namespace trellis::detail
