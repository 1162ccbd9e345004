// Traffic shaping of one channel (see channel_traffic_shaping_handler.hpp).
#include <trellis/pipeline/channel_traffic_shaping_handler.hpp>

#include "traffic_shaping_state.hpp"

namespace trellis {

ChannelTrafficShapingHandler::ChannelTrafficShapingHandler(std::uint64_t write_limit,
                                                           std::uint64_t read_limit,
                                                           std::chrono::nanoseconds check_interval,
                                                           std::size_t max_queued_bytes)
    : AbstractTrafficShapingHandler(max_queued_bytes),
      shaper_(write_limit, read_limit, check_interval),
      state_(create_state()) {}

ChannelTrafficShapingHandler::~ChannelTrafficShapingHandler() { state_->cancel_timers(); }

std::size_t ChannelTrafficShapingHandler::queued_bytes() const noexcept {
  return state_->queued_bytes;
}

std::size_t ChannelTrafficShapingHandler::queued_writes() const noexcept {
  return state_->queue.size();
}

bool ChannelTrafficShapingHandler::is_read_suspended() const noexcept {
  return state_->read_suspended;
}

TrafficShaper& ChannelTrafficShapingHandler::shaper_for(ChannelHandlerContext&) { return shaper_; }

AbstractTrafficShapingHandler::ChannelState& ChannelTrafficShapingHandler::state_for(
    ChannelHandlerContext&) {
  return *state_;
}

}  // namespace trellis
