// The test clock (see manual_clock.hpp).
#include <trellis/pipeline/manual_clock.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace trellis {

void ManualClock::advance_by(std::chrono::nanoseconds d) {
  if (d.count() < 0) throw std::invalid_argument("ManualClock::advance_by: negative duration");
  std::lock_guard lock(mutex_);
  const std::int64_t now = now_.load(std::memory_order_relaxed);
  const std::int64_t room = std::numeric_limits<std::int64_t>::max() - now;
  now_.store(now + std::min(d.count(), room), std::memory_order_release);
  for (auto& [id, fn] : subscribers_) fn();
}

ManualClock::SubscriptionId ManualClock::subscribe(UniqueFunction<void()> fn) {
  std::lock_guard lock(mutex_);
  const SubscriptionId id = next_id_++;
  subscribers_.emplace_back(id, std::move(fn));
  return id;
}

void ManualClock::unsubscribe(SubscriptionId id) noexcept {
  std::lock_guard lock(mutex_);
  std::erase_if(subscribers_, [id](const auto& s) { return s.first == id; });
}

}  // namespace trellis
