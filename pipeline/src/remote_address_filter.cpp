// RemoteAddressFilter (see remote_address_filter.hpp).
#include <trellis/pipeline/remote_address_filter.hpp>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>

namespace trellis {

void RemoteAddressFilter::channel_active(ChannelHandlerContext& ctx) {
  const SocketAddress remote = ctx.channel().remote_address().value_or(SocketAddress());
  if (accept(ctx, remote)) {
    // Removing the handler keeps ctx usable until this callback returns.
    ctx.pipeline().remove(*this);
    channel_accepted(ctx, remote);
    ctx.fire_channel_active();
    return;
  }
  std::optional<Future<void>> answered = channel_rejected(ctx, remote);
  if (!answered) {
    ctx.close();
    return;
  }
  Channel& channel = ctx.channel();
  answered->add_listener([&channel](const Future<void>&) { channel.close(); });
}

void RemoteAddressFilter::channel_read(ChannelHandlerContext& /*ctx*/, Message /*msg*/) {
  // Only a rejected channel still has the filter: its input goes nowhere.
}

void RemoteAddressFilter::channel_read_complete(ChannelHandlerContext& /*ctx*/) {}

void RemoteAddressFilter::channel_inactive(ChannelHandlerContext& /*ctx*/) {}

void RemoteAddressFilter::channel_accepted(ChannelHandlerContext& /*ctx*/,
                                           const SocketAddress& /*remote*/) {}

std::optional<Future<void>> RemoteAddressFilter::channel_rejected(ChannelHandlerContext& /*ctx*/,
                                                                  const SocketAddress& /*remote*/) {
  return std::nullopt;
}

}  // namespace trellis
