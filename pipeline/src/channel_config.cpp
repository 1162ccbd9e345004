// ChannelConfig setters that validate or notify the channel (see channel_config.hpp).
#include <trellis/pipeline/channel_config.hpp>

#include <string>

#include <trellis/pipeline/channel.hpp>

namespace trellis {

ChannelConfig& ChannelConfig::set_auto_read(bool on) {
  const bool old = auto_read_.exchange(on, std::memory_order_relaxed);
  if (on && !old) {
    channel_->read();
  } else if (!on && old) {
    Channel* ch = channel_;
    if (ch->event_loop().in_event_loop()) {
      ch->on_auto_read_cleared();
    } else {
      ch->event_loop().execute([ch] { ch->on_auto_read_cleared(); });
    }
  }
  return *this;
}

ChannelConfig& ChannelConfig::set_write_buffer_water_mark(std::size_t low, std::size_t high) {
  if (low > high) {
    throw InvalidArgumentError("write buffer low water mark (" + std::to_string(low) +
                               ") above the high water mark (" + std::to_string(high) + ")");
  }
  low_water_mark_.store(low, std::memory_order_relaxed);
  high_water_mark_.store(high, std::memory_order_relaxed);
  return *this;
}

ChannelConfig& ChannelConfig::set_max_messages_per_read(int n) {
  if (n <= 0) throw InvalidArgumentError("max_messages_per_read must be positive");
  max_messages_per_read_.store(n, std::memory_order_relaxed);
  return *this;
}

}  // namespace trellis
