// ChannelTrafficShapingHandler: limits one channel's read and write rates in bytes per second
// (Netty's ChannelTrafficShapingHandler).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <trellis/pipeline/abstract_traffic_shaping_handler.hpp>
#include <trellis/pipeline/traffic_shaper.hpp>

namespace trellis {

/// Limits one channel's write and read rates in bytes per second, on the channel's clock: writes
/// over the limit are delayed (queued in order, with their promises, never dropped) and reads
/// over it pause the channel's reading (see AbstractTrafficShapingHandler). One per channel (not
/// sharable); a limit of 0 leaves that direction alone.
class ChannelTrafficShapingHandler final : public AbstractTrafficShapingHandler {
 public:
  /// Limits in bytes per second (0: unlimited); throughput counters over `check_interval`; at
  /// most `max_queued_bytes` delayed before the channel is made unwritable.
  ChannelTrafficShapingHandler(
      std::uint64_t write_limit, std::uint64_t read_limit,
      std::chrono::nanoseconds check_interval = TrafficShaper::kDefaultCheckInterval,
      std::size_t max_queued_bytes = kDefaultMaxQueuedBytes);
  ~ChannelTrafficShapingHandler() override;

  /// The channel's shaper: limits (configure() changes them) and counters.
  TrafficShaper& shaper() noexcept { return shaper_; }
  /// Bytes of delayed writes waiting here.
  std::size_t queued_bytes() const noexcept;
  /// Delayed writes waiting here.
  std::size_t queued_writes() const noexcept;
  /// True while reading is paused.
  bool is_read_suspended() const noexcept;

 protected:
  /// The handler's own shaper.
  TrafficShaper& shaper_for(ChannelHandlerContext& ctx) override;
  /// The handler's one channel state.
  ChannelState& state_for(ChannelHandlerContext& ctx) override;

 private:
  TrafficShaper shaper_;
  std::shared_ptr<ChannelState> state_;
};

}  // namespace trellis
