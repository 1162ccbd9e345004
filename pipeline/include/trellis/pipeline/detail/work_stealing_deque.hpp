// WorkStealingDeque: the bounded local run queue of one WorkStealingPool worker, a Chase-Lev-style
// ring of pointers: the owner pushes at the bottom, every consumer takes from the top with a CAS.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

namespace trellis::detail {

// Why the owner takes from the top (FIFO) and not from the bottom as in the original Chase-Lev
// deque: a task that yields is pushed back by its own worker, and a LIFO owner would pop it right
// back, so yield() would never let queued work run. On x86 the owner's bottom-pop needs a full
// fence anyway, so taking from the top with a CAS costs the same.
//
// Memory model: slots are atomics (relaxed), published by the release store of bottom_; top_ only
// moves by seq_cst CAS, so a slot is never overwritten while a consumer that read top_ may still
// claim it (push refuses to wrap onto a slot whose index top_ has not passed yet).
template <class T, std::size_t Capacity = 256>
class WorkStealingDeque {
  static_assert((Capacity & (Capacity - 1)) == 0, "capacity must be a power of two");
  static_assert(std::is_pointer_v<T>, "the deque holds pointers");

 public:
  WorkStealingDeque() noexcept {
    for (auto& slot : slots_) slot.store(nullptr, std::memory_order_relaxed);
  }
  WorkStealingDeque(const WorkStealingDeque&) = delete;
  WorkStealingDeque& operator=(const WorkStealingDeque&) = delete;

  static constexpr std::size_t capacity() noexcept { return Capacity; }

  // Owner only. Returns false when full (the caller spills to a shared queue).
  bool push(T item) noexcept {
    auto b = bottom_.load(std::memory_order_relaxed);
    auto t = top_.load(std::memory_order_acquire);
    if (b - t >= static_cast<std::int64_t>(Capacity)) return false;
    slots_[static_cast<std::size_t>(b) & kMask].store(item, std::memory_order_relaxed);
    bottom_.store(b + 1, std::memory_order_release);
    return true;
  }

  // Any thread (the owner included): takes the oldest item, or nullptr when empty. Retries when
  // it loses a race with another consumer, so nullptr really means "was empty".
  T take() noexcept {
    for (;;) {
      auto t = top_.load(std::memory_order_seq_cst);
      auto b = bottom_.load(std::memory_order_seq_cst);
      if (t >= b) return nullptr;
      T item = slots_[static_cast<std::size_t>(t) & kMask].load(std::memory_order_relaxed);
      if (top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                       std::memory_order_relaxed)) {
        return item;
      }
    }
  }

  // An estimate (exact for the owner when nobody steals concurrently).
  std::size_t size() const noexcept {
    auto b = bottom_.load(std::memory_order_relaxed);
    auto t = top_.load(std::memory_order_relaxed);
    return b > t ? static_cast<std::size_t>(b - t) : 0;
  }
  bool empty() const noexcept { return size() == 0; }

 private:
  static constexpr std::size_t kMask = Capacity - 1;
  static constexpr std::size_t kLine = 64;

  alignas(kLine) std::atomic<std::int64_t> top_{0};
  alignas(kLine) std::atomic<std::int64_t> bottom_{0};
  alignas(kLine) std::atomic<T> slots_[Capacity];
};

}  // namespace trellis::detail
