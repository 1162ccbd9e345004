// The heartbeat example of docs/handlers.md, reproduced there verbatim and run by
// idle_state_handler_test.cpp: ping a quiet peer, drop a silent one.
#pragma once

#include <chrono>
#include <memory>

#include <trellis/pipeline.hpp>

namespace heartbeat {

using namespace std::chrono_literals;

// Reacts to the IdleStateHandler before it: sends "PING\n" when we wrote nothing for 10 s, and
// closes the connection when the peer sent nothing for 30 s.
class Heartbeat : public trellis::ChannelInboundHandler {
 public:
  void user_event_triggered(trellis::ChannelHandlerContext& ctx, trellis::Message event) override {
    if (const auto* idle = event.try_get<trellis::IdleStateEvent>()) {
      if (idle->state == trellis::IdleState::reader_idle) {
        ctx.close();
      } else if (idle->state == trellis::IdleState::writer_idle) {
        ctx.write_and_flush(trellis::ByteBuf::from("PING\n"));
      }
      return;
    }
    ctx.fire_user_event_triggered(std::move(event));
  }
};

// For a ChannelInitializer: the idle detector first, the heartbeat right after it.
inline void add_heartbeat(trellis::ChannelPipeline& pipeline) {
  pipeline.add_last("idle", std::make_shared<trellis::IdleStateHandler>(30s, 10s, 0s));
  pipeline.add_last("heartbeat", std::make_shared<Heartbeat>());
}

}  // namespace heartbeat
