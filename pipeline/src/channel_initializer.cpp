// ChannelInitializer (see channel_initializer.hpp).
#include <trellis/pipeline/channel_initializer.hpp>

#include <spdlog/spdlog.h>

#include <trellis/pipeline/channel.hpp>

#include "pipeline_internal.hpp"

namespace trellis {

namespace {
class FunctionInitializer final : public ChannelInitializer {
 public:
  explicit FunctionInitializer(std::function<void(Channel&)> fn) : fn_(std::move(fn)) {}

 protected:
  void init_channel(Channel& ch) override { fn_(ch); }

 private:
  std::function<void(Channel&)> fn_;
};
}  // namespace

std::shared_ptr<ChannelInitializer> ChannelInitializer::from(std::function<void(Channel&)> fn) {
  return std::make_shared<FunctionInitializer>(std::move(fn));
}

bool ChannelInitializer::init(ChannelHandlerContext& ctx) {
  {
    std::lock_guard lock(mutex_);
    if (!initialized_.insert(&ctx).second) return false;
  }
  try {
    init_channel(ctx.channel());
  } catch (...) {
    exception_caught(ctx, std::current_exception());
  }
  if (!ctx.is_removed()) ctx.pipeline().remove(ctx.name());
  return true;
}

void ChannelInitializer::handler_added(ChannelHandlerContext& ctx) {
  // Added to a live channel: initialise now (channel_registered will not come again).
  if (ctx.channel().is_registered()) init(ctx);
}

void ChannelInitializer::handler_removed(ChannelHandlerContext& ctx) {
  std::lock_guard lock(mutex_);
  initialized_.erase(&ctx);
}

void ChannelInitializer::channel_registered(ChannelHandlerContext& ctx) {
  // The handlers just added follow this one, so passing the event on reaches them too.
  init(ctx);
  ctx.fire_channel_registered();
}

void ChannelInitializer::exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) {
  spdlog::warn("failed to initialize a channel ({}); closing it",
               detail::describe_exception(error));
  ctx.close();
}

}  // namespace trellis
