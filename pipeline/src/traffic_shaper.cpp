// Read and write pacing (see traffic_shaper.hpp).
#include <trellis/pipeline/traffic_shaper.hpp>

#include <algorithm>
#include <cstdint>

#include <trellis/pipeline/error.hpp>

namespace trellis {

namespace {

// The time `bytes` take at `limit` bytes per second, without overflowing for large counts.
std::int64_t cost_nanos(std::size_t bytes, std::uint64_t limit) {
  const long double t = static_cast<long double>(bytes) * 1e9L / static_cast<long double>(limit);
  constexpr std::int64_t kCap = INT64_MAX / 4;
  return t >= static_cast<long double>(kCap) ? kCap : static_cast<std::int64_t>(t);
}

}  // namespace

TrafficShaper::TrafficShaper(std::uint64_t write_limit, std::uint64_t read_limit,
                             std::chrono::nanoseconds check_interval)
    : check_interval_(check_interval.count()) {
  if (check_interval.count() <= 0) {
    throw InvalidArgumentError("TrafficShaper: check_interval must be positive");
  }
  write_.limit = write_limit;
  read_.limit = read_limit;
}

void TrafficShaper::configure(std::uint64_t write_limit, std::uint64_t read_limit) {
  std::lock_guard lock(mutex_);
  write_.limit = write_limit;
  read_.limit = read_limit;
}

std::uint64_t TrafficShaper::write_limit() const {
  std::lock_guard lock(mutex_);
  return write_.limit;
}

std::uint64_t TrafficShaper::read_limit() const {
  std::lock_guard lock(mutex_);
  return read_.limit;
}

std::int64_t TrafficShaper::write_wait(std::size_t bytes, std::int64_t now) {
  std::lock_guard lock(mutex_);
  return account(write_, bytes, now);
}

std::int64_t TrafficShaper::read_wait(std::size_t bytes, std::int64_t now) {
  std::lock_guard lock(mutex_);
  return account(read_, bytes, now);
}

std::int64_t TrafficShaper::account(Direction& d, std::size_t bytes, std::int64_t now) {
  roll(d, now);
  d.cumulative += bytes;
  d.interval_bytes += bytes;
  if (d.limit == 0) return 0;
  // Idle time is not saved up: a burst after a pause starts paying from now.
  const std::int64_t start = d.started ? std::max(d.paid_until, now) : now;
  d.started = true;
  d.paid_until = start + cost_nanos(bytes, d.limit);
  const std::int64_t wait = d.paid_until - now;
  return wait <= kMinimalWait.count() ? 0 : wait;
}

void TrafficShaper::roll(Direction& d, std::int64_t now) const {
  if (!d.counting) {
    d.counting = true;
    d.interval_start = now;
    return;
  }
  if (now < d.interval_start + check_interval_) return;
  const std::int64_t elapsed = (now - d.interval_start) / check_interval_;
  // The interval that just ended is the last one only if no empty interval followed it.
  d.last_interval_bytes = elapsed == 1 ? d.interval_bytes : 0;
  d.interval_bytes = 0;
  d.interval_start += elapsed * check_interval_;
}

std::uint64_t TrafficShaper::throughput(Direction& d, std::int64_t now) const {
  roll(d, now);
  return static_cast<std::uint64_t>(static_cast<long double>(d.last_interval_bytes) * 1e9L /
                                    static_cast<long double>(check_interval_));
}

std::uint64_t TrafficShaper::cumulative_written_bytes() const {
  std::lock_guard lock(mutex_);
  return write_.cumulative;
}

std::uint64_t TrafficShaper::cumulative_read_bytes() const {
  std::lock_guard lock(mutex_);
  return read_.cumulative;
}

std::uint64_t TrafficShaper::last_write_throughput(std::int64_t now) const {
  std::lock_guard lock(mutex_);
  return throughput(write_, now);
}

std::uint64_t TrafficShaper::last_read_throughput(std::int64_t now) const {
  std::lock_guard lock(mutex_);
  return throughput(read_, now);
}

}  // namespace trellis
