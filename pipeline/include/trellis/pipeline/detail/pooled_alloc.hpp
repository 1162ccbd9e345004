// Size-classed allocation from the per-thread node caches, for the framework's short-lived
// objects whose size is known only where they are made: future states, coroutine frames, callables
// too big for a UniqueFunction's inline storage. Sizes up to kMaxPooledSize (4 KiB) are rounded
// up to a size class and served by NodeCache<that size>; bigger ones go to the heap. The caller
// passes the same size to pooled_deallocate (sized delete does).
#pragma once

#include <cstddef>
#include <new>

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

// n bytes, aligned for any type of at most alignof(std::max_align_t). Out of line (one call and
// a jump on the class): inlined, the dispatch over the classes would grow every caller.
void* pooled_allocate(std::size_t n);

// Gives back what pooled_allocate(n) returned, with the same n.
void pooled_deallocate(void* p, std::size_t n) noexcept;

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
