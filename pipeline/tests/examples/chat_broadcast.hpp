// The chat example of docs/pipeline.md, reproduced there verbatim and run by
// channel_group_test.cpp: whatever a client sends goes to every other client.
#pragma once

#include <cstddef>
#include <utility>

#include <trellis/pipeline.hpp>

namespace chat {

// One instance serves every connection (it is sharable) and owns the group of connected
// clients. Put a framing decoder before it (a LineBasedFrameDecoder for a line chat).
class ChatHandler : public trellis::ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }

  void channel_active(trellis::ChannelHandlerContext& ctx) override {
    clients_.add(ctx.channel());  // it leaves the group by itself when it closes
    ctx.fire_channel_active();
  }

  void channel_read(trellis::ChannelHandlerContext& ctx, trellis::Message msg) override {
    // Everyone but the sender; a ByteBuf is shared by the receivers, not copied.
    clients_.write_and_flush(std::move(msg), trellis::channel_matchers::is_not(ctx.channel()));
  }

  std::size_t online() const { return clients_.size(); }
  // At shutdown: closes every client; the future completes when all have closed.
  trellis::Future<void> close_all() { return clients_.close(); }

 private:
  trellis::ChannelGroup clients_{"chat"};
};

}  // namespace chat
