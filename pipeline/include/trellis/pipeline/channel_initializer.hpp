// ChannelInitializer: a handler that sets up a channel's pipeline once the channel is
// registered (typically a server's child handler), then removes itself. It is sharable: one
// instance serves every accepted channel.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <utility>

#include <trellis/pipeline/channel_handler_context.hpp>

namespace trellis {

class Channel;

class ChannelInitializer : public ChannelInboundHandler {
 public:
  // A ChannelInitializer running fn(channel).
  static std::shared_ptr<ChannelInitializer> from(std::function<void(Channel&)> fn);

  bool is_sharable() const noexcept override { return true; }

  void handler_added(ChannelHandlerContext& ctx) override;
  void handler_removed(ChannelHandlerContext& ctx) override;
  void channel_registered(ChannelHandlerContext& ctx) override;
  // An exception from init_channel (or later) is logged and the channel closed.
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) override;

 protected:
  // Adds the channel's handlers (usually with ch.pipeline().add_last(...)).
  virtual void init_channel(Channel& ch) = 0;

 private:
  // Runs init_channel once per context; true when it ran now.
  bool init(ChannelHandlerContext& ctx);

  std::mutex mutex_;
  std::unordered_set<ChannelHandlerContext*> initialized_;
};

}  // namespace trellis
