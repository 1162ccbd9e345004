// Parker: a one-token park/unpark for one thread (as Rust's thread::park), used by the workers of
// WorkStealingPool. An unpark before the park is not lost: the next park returns at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace trellis::detail {

class Parker {
 public:
  // Blocks until unparked (or, with a deadline on the steady clock in nanoseconds, until then).
  // Spurious returns are allowed: callers re-check their condition.
  void park() noexcept { park_until(-1); }
  void park_until(std::int64_t deadline_nanos) noexcept {
    if (consume_token()) return;
    std::unique_lock lock(mutex_);
    int expected = kEmpty;
    if (!state_.compare_exchange_strong(expected, kParked, std::memory_order_acq_rel)) {
      state_.store(kEmpty, std::memory_order_release);  // it was kNotified
      return;
    }
    for (;;) {
      if (deadline_nanos < 0) {
        cv_.wait(lock);
      } else {
        auto deadline =
            std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_nanos));
        if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
          state_.exchange(kEmpty, std::memory_order_acq_rel);  // consumes a racing token too
          return;
        }
      }
      expected = kNotified;
      if (state_.compare_exchange_strong(expected, kEmpty, std::memory_order_acq_rel)) return;
    }
  }

  // Wakes the parked thread, or makes its next park return at once.
  void unpark() noexcept {
    if (state_.exchange(kNotified, std::memory_order_acq_rel) != kParked) return;
    // Taking the lock orders this notify after the parker's wait began.
    { std::lock_guard lock(mutex_); }
    cv_.notify_one();
  }

 private:
  static constexpr int kEmpty = 0;
  static constexpr int kParked = 1;
  static constexpr int kNotified = 2;

  bool consume_token() noexcept {
    int expected = kNotified;
    return state_.compare_exchange_strong(expected, kEmpty, std::memory_order_acq_rel);
  }

  std::atomic<int> state_{kEmpty};
  std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace trellis::detail
