// ReadTimeoutHandler: closes a channel on which nothing was read for a while, after firing
// ReadTimeoutError through exception_caught (Netty's ReadTimeoutHandler).
#pragma once

#include <chrono>

#include <trellis/pipeline/idle_state_handler.hpp>

namespace trellis {

/// Closes a channel on which nothing was read for a while, after firing ReadTimeoutError through
/// `exception_caught`.
///
/// Reader idleness as IdleStateHandler measures it (reads count at channel_read_complete; the
/// timer re-arms lazily), but instead of an IdleStateEvent the first timeout fires
/// ReadTimeoutError to the next handler's exception_caught and closes the channel. It fires once.
class ReadTimeoutHandler : public IdleStateHandler {
 public:
  /// Times out after `timeout` without a read (zero or negative: never).
  explicit ReadTimeoutHandler(std::chrono::nanoseconds timeout)
      : IdleStateHandler(timeout, std::chrono::nanoseconds(0), std::chrono::nanoseconds(0)) {}

 protected:
  /// Calls read_timed_out() instead of firing the event.
  void channel_idle(ChannelHandlerContext& ctx, IdleStateEvent event) override;
  /// Fires ReadTimeoutError and closes the channel (the first time only). Override to do
  /// something else on a read timeout.
  virtual void read_timed_out(ChannelHandlerContext& ctx);

 private:
  bool closed_ = false;
};

}  // namespace trellis
