// TrafficShaper: the byte accounting behind the traffic shaping handlers. It paces reads and
// writes to limits in bytes per second on the caller's clock and keeps throughput counters.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace trellis {

/// Paces reads and writes to limits in bytes per second, and counts them. Each direction keeps
/// the time up to which the bytes it was given are paid for at its limit: `wait` returns how long
/// the caller must hold the bytes it just reported so that, over time, no more than the limit
/// goes through. Waits of at most kMinimalWait are reported as 0 (the bytes go at once and the
/// debt carries over), so small messages are not delayed one by one, and the rate is exact over
/// any stretch longer than that. A limit of 0 means unlimited.
///
/// Times are nanoseconds of the caller's clock (its executor's current_time_nanos()). Every member
/// is thread-safe (one mutex), so one shaper can pace channels on several loops
/// (GlobalTrafficShapingHandler).
class TrafficShaper {
 public:
  /// Waits up to this long are not worth a timer (Netty's MINIMAL_WAIT).
  static constexpr std::chrono::nanoseconds kMinimalWait = std::chrono::milliseconds(10);
  /// The default period of the throughput counters.
  static constexpr std::chrono::nanoseconds kDefaultCheckInterval = std::chrono::seconds(1);

  /// Limits in bytes per second (0: unlimited); the throughput counters are computed over
  /// `check_interval` (> 0).
  TrafficShaper(std::uint64_t write_limit, std::uint64_t read_limit,
                std::chrono::nanoseconds check_interval = kDefaultCheckInterval);

  /// Changes the limits; bytes already accounted keep their schedule.
  void configure(std::uint64_t write_limit, std::uint64_t read_limit);
  /// The write limit in bytes per second (0: unlimited).
  std::uint64_t write_limit() const;
  /// The read limit in bytes per second (0: unlimited).
  std::uint64_t read_limit() const;
  /// The period of the throughput counters.
  std::chrono::nanoseconds check_interval() const noexcept {
    return std::chrono::nanoseconds(check_interval_);
  }

  /// Accounts `bytes` written at `now`; returns how long to hold them back (0: send now).
  std::int64_t write_wait(std::size_t bytes, std::int64_t now);
  /// Accounts `bytes` read at `now`; returns how long to stop reading (0: read on).
  std::int64_t read_wait(std::size_t bytes, std::int64_t now);

  /// Bytes written since construction.
  std::uint64_t cumulative_written_bytes() const;
  /// Bytes read since construction.
  std::uint64_t cumulative_read_bytes() const;
  /// Bytes per second written during the last complete check interval before `now`.
  std::uint64_t last_write_throughput(std::int64_t now) const;
  /// Bytes per second read during the last complete check interval before `now`.
  std::uint64_t last_read_throughput(std::int64_t now) const;

 private:
  struct Direction {
    std::uint64_t limit = 0;
    std::int64_t paid_until = 0;
    bool started = false;
    std::uint64_t cumulative = 0;
    bool counting = false;
    // Throughput counters: bytes of the interval starting at interval_start, and of the last one.
    std::int64_t interval_start = 0;
    std::uint64_t interval_bytes = 0;
    std::uint64_t last_interval_bytes = 0;
  };

  std::int64_t account(Direction& d, std::size_t bytes, std::int64_t now);
  void roll(Direction& d, std::int64_t now) const;
  std::uint64_t throughput(Direction& d, std::int64_t now) const;

  const std::int64_t check_interval_;
  mutable std::mutex mutex_;
  mutable Direction write_;
  mutable Direction read_;
};

}  // namespace trellis
