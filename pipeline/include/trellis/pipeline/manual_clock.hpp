// ManualClock: a thread-safe clock that only moves when told to (advance_by). An EventLoop built
// with EventLoopOptions::clock reads its time from one, so tests drive the timers of a real loop
// (connect timeouts, back-offs, sleeps, idle timeouts) in virtual time. Loops subscribe to it and
// are woken by every advance.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include <trellis/pipeline/unique_function.hpp>

namespace trellis {

/// A thread-safe clock that only moves when told to (advance_by()), for tests: an EventLoop built
/// with `EventLoopOptions::clock` reads its time from one. Every member may be called from any
/// thread.
class ManualClock {
 public:
  /// The clock starts at `start` (nanoseconds on its own timeline).
  explicit ManualClock(std::chrono::nanoseconds start = std::chrono::nanoseconds(0)) noexcept
      : now_(start.count()) {}
  ManualClock(const ManualClock&) = delete;
  ManualClock& operator=(const ManualClock&) = delete;

  /// The current reading, from any thread.
  std::chrono::nanoseconds now() const noexcept { return std::chrono::nanoseconds(now_nanos()); }
  /// The current reading in nanoseconds.
  std::int64_t now_nanos() const noexcept { return now_.load(std::memory_order_acquire); }

  /// Moves the clock forward by `d` (d >= 0, else std::invalid_argument; saturates at the end of
  /// the timeline), then calls every subscriber. From any thread, including a loop's own.
  void advance_by(std::chrono::nanoseconds d);

  /// Identifies a subscription (see subscribe()).
  using SubscriptionId = std::uint64_t;
  /// Calls `fn` after every advance, on the advancing thread, under the clock's lock: `fn` must be
  /// quick and must neither advance the clock nor (un)subscribe. Returns the id unsubscribe()
  /// takes.
  SubscriptionId subscribe(UniqueFunction<void()> fn);
  /// Ends a subscription. Once it returns, its function is not running and is never called again.
  void unsubscribe(SubscriptionId id) noexcept;

 private:
  std::atomic<std::int64_t> now_;
  std::mutex mutex_;
  SubscriptionId next_id_ = 1;
  std::vector<std::pair<SubscriptionId, UniqueFunction<void()>>> subscribers_;
};

}  // namespace trellis
