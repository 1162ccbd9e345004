// GlobalTrafficShapingHandler: one read limit and one write limit shared by every channel it is
// added to, on any loop (Netty's GlobalTrafficShapingHandler).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <trellis/pipeline/abstract_traffic_shaping_handler.hpp>
#include <trellis/pipeline/attribute_map.hpp>
#include <trellis/pipeline/traffic_shaper.hpp>

namespace trellis {

class Channel;

/// One write limit and one read limit in bytes per second for all the channels that share this
/// handler (a whole server): the bytes of every channel are paced together by one TrafficShaper
/// (thread-safe, so channels on every loop of a group may share it). Each channel's delayed
/// writes and read pauses are its own, on its own loop (see AbstractTrafficShapingHandler).
/// Sharable: create one and add it to every channel's pipeline.
///
/// The waits are computed on each channel's loop clock; the loops of one process share the
/// monotonic clock, so the accounting is consistent.
class GlobalTrafficShapingHandler final : public AbstractTrafficShapingHandler {
 public:
  /// Limits in bytes per second (0: unlimited) for all channels together; throughput counters
  /// over `check_interval`; at most `max_queued_bytes` delayed per channel before that channel is
  /// made unwritable.
  GlobalTrafficShapingHandler(
      std::uint64_t write_limit, std::uint64_t read_limit,
      std::chrono::nanoseconds check_interval = TrafficShaper::kDefaultCheckInterval,
      std::size_t max_queued_bytes = kDefaultMaxQueuedBytes);

  /// Shared by every channel it is added to.
  bool is_sharable() const noexcept override { return true; }
  /// The shared shaper: limits (configure() changes them) and counters of all channels.
  TrafficShaper& shaper() noexcept { return shaper_; }
  /// Bytes of `channel`'s delayed writes waiting here (0 when the handler is not in its pipeline).
  std::size_t queued_bytes(const Channel& channel) const;

  void handler_added(ChannelHandlerContext& ctx) override;
  void handler_removed(ChannelHandlerContext& ctx) override;

 protected:
  /// The shared shaper.
  TrafficShaper& shaper_for(ChannelHandlerContext& ctx) override;
  /// The state kept in the channel's attribute for this handler.
  ChannelState& state_for(ChannelHandlerContext& ctx) override;

 private:
  TrafficShaper shaper_;
  AttributeKey<std::shared_ptr<ChannelState>> key_{"GlobalTrafficShapingHandler"};
};

}  // namespace trellis
