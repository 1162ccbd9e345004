// Size-classed allocation from the per-thread node caches, for the framework's short-lived
// objects whose size is known only where they are made: future states, coroutine frames, callables
// too big for a UniqueFunction's inline storage. Sizes up to kMaxPooledSize (4 KiB) are rounded
// up to a size class and served by NodeCache<that size>; bigger ones go to the heap. The caller
// passes the same size to pooled_deallocate (sized delete does).
#pragma once

#include <cstddef>
#include <new>
#include <utility>

#include <trellis/pipeline/detail/node_cache.hpp>

namespace trellis::detail {

// Up to 1 KiB the classes are 64 bytes apart; from there to 4 KiB, 256 bytes apart.
inline constexpr std::size_t kSmallGranule = 64;
inline constexpr std::size_t kSmallLimit = 1024;
inline constexpr std::size_t kLargeGranule = 256;
inline constexpr std::size_t kMaxPooledSize = 4096;
inline constexpr std::size_t kSmallClasses = kSmallLimit / kSmallGranule;  // 1..16
inline constexpr std::size_t kPooledClasses =
    kSmallClasses + (kMaxPooledSize - kSmallLimit) / kLargeGranule;  // 17..28

// The block size of a class.
constexpr std::size_t pooled_class_size(std::size_t cls) noexcept {
  return cls <= kSmallClasses ? cls * kSmallGranule
                              : kSmallLimit + (cls - kSmallClasses) * kLargeGranule;
}

// The class of an n-byte object (1..kPooledClasses), or 0 when it is not pooled.
constexpr std::size_t pooled_class(std::size_t n) noexcept {
  if (n <= kSmallLimit) return (n + kSmallGranule - 1) / kSmallGranule;
  if (n <= kMaxPooledSize)
    return kSmallClasses + (n - kSmallLimit + kLargeGranule - 1) / kLargeGranule;
  return 0;
}

template <class Indexes>
struct PooledClasses;
template <std::size_t... I>
struct PooledClasses<std::index_sequence<I...>> {
  // Class I + 1 is served by NodeCache<pooled_class_size(I + 1)>; the fold stops at it.
  static void* allocate(std::size_t cls) {
    void* p = nullptr;
    (void)((cls == I + 1 ? (p = NodeCache<pooled_class_size(I + 1)>::allocate(), true) : false) ||
           ...);
    return p;
  }
  static void deallocate(void* p, std::size_t cls) noexcept {
    (void)((cls == I + 1 ? (NodeCache<pooled_class_size(I + 1)>::deallocate(p), true) : false) ||
           ...);
  }
};
using PooledSizeClasses = PooledClasses<std::make_index_sequence<kPooledClasses>>;

// n bytes, aligned for any type of at most alignof(std::max_align_t).
inline void* pooled_allocate(std::size_t n) {
  const std::size_t cls = pooled_class(n);
  if (cls == 0) return ::operator new(n);
  return PooledSizeClasses::allocate(cls);
}

// Gives back what pooled_allocate(n) returned, with the same n.
inline void pooled_deallocate(void* p, std::size_t n) noexcept {
  const std::size_t cls = pooled_class(n);
  if (cls == 0) {
    ::operator delete(p);
    return;
  }
  PooledSizeClasses::deallocate(p, cls);
}

// A base whose class-level new and delete take the memory from pooled_allocate: for objects
// made and dropped per operation (future states, listener boxes, coroutine promises, whose frames
// are then pooled too). Over-aligned types go to the aligned heap functions.
struct PooledNew {
  static void* operator new(std::size_t n) { return pooled_allocate(n); }
  static void operator delete(void* p, std::size_t n) noexcept { pooled_deallocate(p, n); }
  static void* operator new(std::size_t n, std::align_val_t a) { return ::operator new(n, a); }
  static void operator delete(void* p, std::size_t, std::align_val_t a) noexcept {
    ::operator delete(p, a);
  }
};

}  // namespace trellis::detail
