// MessageToMessageDecoder<T>: an inbound handler that turns each message of type T into zero or
// more messages (decode appends them to out); other messages pass through untouched.
#pragma once

#include <vector>

#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/detail/message_list_pool.hpp>

namespace trellis {

/// An inbound handler that turns each message of type `T` into zero or more messages (decode()
/// appends them to `out`); other messages pass through untouched. Sharable when the subclass
/// keeps no per-channel state.
///
/// Errors: an exception decode() throws goes to `exception_caught` of the next handler, after
/// the messages it appended before throwing were passed on.
template <class T>
class MessageToMessageDecoder : public ChannelInboundHandler {
 public:
  /// Decodes an accepted message and passes the results on in order; passes any other on.
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    if (!accept_inbound_message(msg)) {
      ctx.fire_channel_read(std::move(msg));
      return;
    }
    // The list comes from a per-thread pool, so steady-state decoding allocates nothing and a
    // sharable decoder may serve several loops at once.
    detail::PooledMessageList out;
    try {
      decode(ctx, msg.take<T>(), out.list());
    } catch (...) {
      // What was decoded before the failure still goes on, then the error.
      for (auto& m : out.list()) ctx.fire_channel_read(std::move(m));
      throw;
    }
    for (auto& m : out.list()) ctx.fire_channel_read(std::move(m));
  }

 protected:
  /// Appends what `msg` decodes to (possibly nothing) to `out`.
  virtual void decode(ChannelHandlerContext& ctx, T msg, std::vector<Message>& out) = 0;
  /// Whether to decode `msg` (default: it holds a `T`). Override to filter further.
  virtual bool accept_inbound_message(const Message& msg) const { return msg.is<T>(); }
};

}  // namespace trellis
