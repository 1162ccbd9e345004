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

/// A handler that sets up a channel's pipeline once the channel is registered (or at once when
/// added to a registered channel), then removes itself. Typically a server's child handler.
/// Derive and implement init_channel(), or use from() with a lambda. It is sharable: one
/// instance serves every channel. Errors: an exception from init_channel is logged and the
/// channel closed.
class ChannelInitializer : public ChannelInboundHandler {
 public:
  /// A ChannelInitializer running `fn(channel)`.
  static std::shared_ptr<ChannelInitializer> from(std::function<void(Channel&)> fn);

  /// True: one instance may serve many channels.
  bool is_sharable() const noexcept override { return true; }

  /// Runs init_channel at once when the channel is already registered.
  void handler_added(ChannelHandlerContext& ctx) override;
  /// Forgets the channel.
  void handler_removed(ChannelHandlerContext& ctx) override;
  /// Runs init_channel (once per channel), removes this handler and passes the event on.
  void channel_registered(ChannelHandlerContext& ctx) override;
  /// An exception from init_channel (or later) is logged and the channel closed.
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) override;

 protected:
  /// Adds the channel's handlers (usually with `ch.pipeline().add_last(...)`).
  virtual void init_channel(Channel& ch) = 0;

 private:
  // Runs init_channel once per context; true when it ran now.
  bool init(ChannelHandlerContext& ctx);

  std::mutex mutex_;
  std::unordered_set<ChannelHandlerContext*> initialized_;
};

}  // namespace trellis
