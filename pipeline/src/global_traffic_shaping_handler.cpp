// Traffic shaping shared by many channels (see global_traffic_shaping_handler.hpp).
#include <trellis/pipeline/global_traffic_shaping_handler.hpp>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

#include "traffic_shaping_state.hpp"

namespace trellis {

GlobalTrafficShapingHandler::GlobalTrafficShapingHandler(std::uint64_t write_limit,
                                                         std::uint64_t read_limit,
                                                         std::chrono::nanoseconds check_interval,
                                                         std::size_t max_queued_bytes)
    : AbstractTrafficShapingHandler(max_queued_bytes),
      shaper_(write_limit, read_limit, check_interval) {}

void GlobalTrafficShapingHandler::handler_added(ChannelHandlerContext& ctx) {
  ctx.channel().set_attr(key_, create_state());
}

void GlobalTrafficShapingHandler::handler_removed(ChannelHandlerContext& ctx) {
  // The state stays in the channel (inactive, empty) until the channel goes: an event still in
  // flight through the removed handler finds it.
  if (ctx.channel().attr(key_) != nullptr) AbstractTrafficShapingHandler::handler_removed(ctx);
}

std::size_t GlobalTrafficShapingHandler::queued_bytes(const Channel& channel) const {
  auto* state = channel.attr(key_);
  return state != nullptr ? (*state)->queued_bytes : 0;
}

TrafficShaper& GlobalTrafficShapingHandler::shaper_for(ChannelHandlerContext&) { return shaper_; }

AbstractTrafficShapingHandler::ChannelState& GlobalTrafficShapingHandler::state_for(
    ChannelHandlerContext& ctx) {
  return **ctx.channel().attr(key_);
}

}  // namespace trellis
