// SimpleChannelInboundHandler<T>: an inbound handler for messages of one type. Messages of type
// T go to channel_read0, as a reference to the value in the Message, which is destroyed when
// channel_read0 returns (Netty's release after channelRead0): move out what you keep. Anything
// else is passed on untouched.
#pragma once

#include <trellis/pipeline/channel_handler_context.hpp>

namespace trellis {

/// An inbound handler for messages of one type. Messages of type `T` go to channel_read0(), as a
/// reference to the value in the Message, which is destroyed when channel_read0() returns: move
/// out what you keep. Anything else is passed on untouched.
template <class T>
class SimpleChannelInboundHandler : public ChannelInboundHandler {
 public:
  /// Calls channel_read0() for an accepted message, else passes `msg` on.
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    if (accept_inbound_message(msg)) {
      // In place: a large message (an HTTP request) is not moved out of its box first.
      channel_read0(ctx, msg.get<T>());
    } else {
      ctx.fire_channel_read(std::move(msg));
    }
  }

 protected:
  /// Called for each message of type T; the value may be moved from, and is destroyed afterwards.
  virtual void channel_read0(ChannelHandlerContext& ctx, T& msg) = 0;
  /// Whether to handle `msg` (default: it holds a T). Override to filter further.
  virtual bool accept_inbound_message(const Message& msg) const { return msg.is<T>(); }
};

}  // namespace trellis
