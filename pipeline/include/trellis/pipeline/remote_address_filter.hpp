// RemoteAddressFilter: the base of the handlers that accept or reject a channel by its remote
// address when it becomes active (Netty's AbstractRemoteAddressFilter): IpSubnetFilter and
// UniqueIpFilter.
#pragma once

#include <optional>

#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/future.hpp>
#include <trellis/pipeline/socket_address.hpp>

namespace trellis {

/// Accepts or rejects a channel by its remote address when it becomes active (Netty's
/// AbstractRemoteAddressFilter). Put it first in the pipeline.
///
/// At channel_active it asks accept(ctx, remote) (the remote address, or an empty SocketAddress
/// when the channel has none). Accepted: the filter removes itself, calls channel_accepted and
/// passes channel_active on. Rejected: channel_rejected runs, then the channel is closed (once the
/// future channel_rejected returned is done, when it returned one); later handlers see neither
/// channel_active nor channel_inactive nor any read (the filter drops them): a rejected channel
/// never starts for them.
///
/// Threading: callbacks run on the channel's loop. Subclasses keep per-channel state out of the
/// handler, so they can be sharable.
class RemoteAddressFilter : public ChannelInboundHandler {
 public:
  /// Decides (see the class comment), then removes itself or closes the channel.
  void channel_active(ChannelHandlerContext& ctx) override;
  /// Drops reads of a rejected channel (an accepted channel has no filter any more).
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  /// Swallowed for a rejected channel, like its reads.
  void channel_read_complete(ChannelHandlerContext& ctx) override;
  /// Swallowed for a rejected channel: later handlers never saw it active.
  void channel_inactive(ChannelHandlerContext& ctx) override;

 protected:
  /// True to accept the channel connected from `remote` (called once per channel).
  virtual bool accept(ChannelHandlerContext& ctx, const SocketAddress& remote) = 0;
  /// Called for an accepted channel, before channel_active goes on; does nothing by default.
  virtual void channel_accepted(ChannelHandlerContext& ctx, const SocketAddress& remote);
  /// Called for a rejected channel before it is closed. It may write a response (with
  /// ctx.write_and_flush(msg, promise)) and return that write's future: the channel is closed
  /// once it is done (whether it succeeded or not). std::nullopt (the default) closes at once.
  virtual std::optional<Future<void>> channel_rejected(ChannelHandlerContext& ctx,
                                                       const SocketAddress& remote);
};

}  // namespace trellis
