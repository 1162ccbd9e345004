// MessageToMessageEncoder<T>: an outbound handler that turns each written message of type T
// into zero or more messages (encode appends them to out); other messages pass through.
#pragma once

#include <vector>

#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/detail/message_list_pool.hpp>

namespace trellis {

/// An outbound handler that turns each written message of type `T` into zero or more messages
/// (encode() appends them to `out`); other messages pass through. Sharable when the subclass
/// keeps no per-channel state.
///
/// The write's promise goes with the last encoded message (so it completes once all of them are
/// written, since writes complete in order). Encoding to nothing completes the promise at once.
template <class T>
class MessageToMessageEncoder : public ChannelOutboundHandler {
 public:
  /// Encodes an accepted message and writes the results in order; writes any other as it is.
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override {
    if (!accept_outbound_message(msg)) {
      ctx.write(std::move(msg), std::move(promise));
      return;
    }
    detail::PooledMessageList out;
    encode(ctx, msg.take<T>(), out.list());
    auto& list = out.list();
    if (list.empty()) {
      promise.try_set_value();
      return;
    }
    for (std::size_t i = 0; i + 1 < list.size(); ++i) ctx.write(std::move(list[i]));
    ctx.write(std::move(list.back()), std::move(promise));
  }

 protected:
  /// Appends what `msg` encodes to (possibly nothing) to `out`. An exception fails the write's
  /// promise (or goes to `exception_caught` without one); nothing encoded is written then.
  virtual void encode(ChannelHandlerContext& ctx, T msg, std::vector<Message>& out) = 0;
  /// Whether to encode `msg` (default: it holds a `T`). Override to filter further.
  virtual bool accept_outbound_message(const Message& msg) const { return msg.is<T>(); }
};

}  // namespace trellis
