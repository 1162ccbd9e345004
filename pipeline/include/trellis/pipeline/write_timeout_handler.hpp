// WriteTimeoutHandler: fails a write that has not completed within a timeout with
// WriteTimeoutError and closes the channel (Netty's WriteTimeoutHandler).
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>

#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/scheduled_future.hpp>

namespace trellis {

/// Fails a write that has not completed within a timeout with WriteTimeoutError and closes the
/// channel.
///
/// Each write passing this handler gets a timer on the channel's clock, cancelled when the write
/// completes (the transport took all of it, or it failed). When the timer runs out first, the
/// write's promise fails with WriteTimeoutError (a write without a promise: WriteTimeoutError is
/// fired to the next handler's exception_caught, as a failed write without a promise reports its
/// failure) and the channel is closed, once. The write still in the outbound buffer then fails
/// with ClosedChannelError, which its already failed promise ignores.
///
/// The time counts from the write, not the flush: put the handler where writes are flushed
/// promptly (write_and_flush), as in Netty. Zero (or negative) turns it off. Each write costs a
/// scheduled task and a promise of the channel's loop (to learn of completion even when the
/// writer passed none). Not sharable.
class WriteTimeoutHandler : public ChannelOutboundHandler {
 public:
  /// Times out a write after `timeout` (zero or negative: never).
  explicit WriteTimeoutHandler(std::chrono::nanoseconds timeout) : timeout_(timeout.count()) {}
  /// Cancels the running timers.
  ~WriteTimeoutHandler() override;

  /// The timeout (0 or negative when off).
  std::chrono::nanoseconds timeout() const noexcept { return std::chrono::nanoseconds(timeout_); }
  /// Writes whose timer is running (for tests and diagnostics).
  std::size_t pending_writes() const noexcept { return pending_.size(); }

  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;
  void handler_removed(ChannelHandlerContext& ctx) override;

 protected:
  /// Called after a timed-out write's promise failed (or, without a promise, after
  /// WriteTimeoutError was fired); closes the channel the first time. Override to do more.
  virtual void write_timed_out(ChannelHandlerContext& ctx);

 private:
  struct PendingWrite;
  using PendingList = std::list<std::shared_ptr<PendingWrite>>;

  void on_timeout(ChannelHandlerContext& ctx, PendingWrite* write);
  void unlink(PendingWrite& write) noexcept;
  void cancel_all() noexcept;

  const std::int64_t timeout_;
  PendingList pending_;
  bool closed_ = false;
};

}  // namespace trellis
