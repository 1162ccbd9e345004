// IdleStateHandler: fires IdleStateEvent user events when a channel has not read, not written,
// or done neither for a while (Netty's IdleStateHandler), on the channel's executor clock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/idle_state_event.hpp>
#include <trellis/pipeline/scheduled_future.hpp>

namespace trellis {

/// Fires IdleStateEvent user events when a channel has not read, not written, or done neither
/// for a while, on the channel's executor clock.
///
/// reader_idle: no read for that long; writer_idle: no write completed for that long; all_idle:
/// neither. Zero (or negative) turns a kind off; a positive time below 1 ms counts as 1 ms. The
/// first event of a period of idleness has first = true; if the channel stays idle, one more
/// event (first = false) follows every further period.
///
/// Reads count at channel_read_complete (the end of a batch), and a batch in progress counts as
/// activity. A write counts when it completes; with observe_output, a flushed write that is still
/// going out (the outbound buffer made progress since the last check) counts as well, so a slow
/// peer that takes a large response bit by bit does not make the channel look writer- or
/// all-idle.
///
/// Cost: one scheduled task per enabled kind, armed when the channel becomes active. Reads only
/// record the time; when a task fires it computes the time left from the last activity and
/// re-arms itself, so no timer is touched per message. With writer_idle or all_idle enabled each
/// write gets a promise of the channel's loop to learn when it completes (a write without a
/// promise still reports its failures as exception_caught, except ClosedChannelError).
///
/// Not sharable: it keeps per-channel state.
class IdleStateHandler : public ChannelDuplexHandler {
 public:
  /// @name Construction
  ///@{

  /// A handler with these idle times (zero or negative: that kind is off), and with
  /// `observe_output` (default false) counting a flushed write still going out as activity.
  IdleStateHandler(std::chrono::nanoseconds reader_idle, std::chrono::nanoseconds writer_idle,
                   std::chrono::nanoseconds all_idle)
      : IdleStateHandler(false, reader_idle, writer_idle, all_idle) {}
  IdleStateHandler(bool observe_output, std::chrono::nanoseconds reader_idle,
                   std::chrono::nanoseconds writer_idle, std::chrono::nanoseconds all_idle);
  ///@}
  /// Cancels the timers.
  ~IdleStateHandler() override;

  /// @name Idle times
  ///@{

  /// The effective times (0 when off).
  std::chrono::nanoseconds reader_idle_time() const noexcept {
    return std::chrono::nanoseconds(reader_idle_);
  }
  std::chrono::nanoseconds writer_idle_time() const noexcept {
    return std::chrono::nanoseconds(writer_idle_);
  }
  std::chrono::nanoseconds all_idle_time() const noexcept {
    return std::chrono::nanoseconds(all_idle_);
  }
  ///@}

  /// Whether a flushed write still going out counts as activity.
  bool observe_output() const noexcept { return observe_output_; }

  void handler_added(ChannelHandlerContext& ctx) override;
  void handler_removed(ChannelHandlerContext& ctx) override;
  void channel_registered(ChannelHandlerContext& ctx) override;
  void channel_active(ChannelHandlerContext& ctx) override;
  void channel_inactive(ChannelHandlerContext& ctx) override;
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  void channel_read_complete(ChannelHandlerContext& ctx) override;
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;

 protected:
  /// Called for each idle event; the default fires it as a user event to the next handler.
  virtual void channel_idle(ChannelHandlerContext& ctx, IdleStateEvent event);

 private:
  enum class Phase { kNew, kRunning, kStopped };

  void start(ChannelHandlerContext& ctx);
  void stop() noexcept;
  ScheduledFuture<void> arm(ChannelHandlerContext& ctx, IdleState kind, std::int64_t delay);
  void on_timer(ChannelHandlerContext& ctx, IdleState kind);
  std::int64_t period_of(IdleState kind) const noexcept;
  ScheduledFuture<void>& timer_of(IdleState kind) noexcept;
  // Records where the outbound buffer stands (observe_output).
  void snapshot_output(ChannelHandlerContext& ctx) noexcept;
  // observe_output: whether writes made progress since the last check (Netty's
  // hasOutputChanged); a check that reports progress also stamps the snapshot.
  bool output_changed(ChannelHandlerContext& ctx, bool first) noexcept;

  const bool observe_output_;
  const std::int64_t reader_idle_;
  const std::int64_t writer_idle_;
  const std::int64_t all_idle_;

  Phase phase_ = Phase::kNew;
  ScheduledFuture<void> reader_timer_;
  ScheduledFuture<void> writer_timer_;
  ScheduledFuture<void> all_timer_;
  std::int64_t last_read_time_ = 0;
  std::int64_t last_write_time_ = 0;
  bool reading_ = false;
  bool first_reader_idle_ = true;
  bool first_writer_idle_ = true;
  bool first_all_idle_ = true;

  // observe_output: the outbound buffer as last seen.
  std::int64_t last_change_check_time_ = 0;
  const void* last_message_ = nullptr;
  std::size_t last_pending_bytes_ = 0;
  std::size_t last_progress_ = 0;
};

}  // namespace trellis
