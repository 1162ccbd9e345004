// AbstractTrafficShapingHandler: the per-channel half of traffic shaping. Writes over the limit
// are queued and released on schedule; reads over the limit pause the channel's reading. The
// channel and global handlers differ in whose TrafficShaper paces them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/detail/ring_buffer.hpp>
#include <trellis/pipeline/scheduled_future.hpp>
#include <trellis/pipeline/traffic_shaper.hpp>

namespace trellis {

/// The per-channel half of traffic shaping, paced by a TrafficShaper that the derived handler
/// provides (ChannelTrafficShapingHandler: its own; GlobalTrafficShapingHandler: one for all).
///
/// Writes: a write the shaper says must wait is queued here, in order with every later write of
/// the channel, and released (written, then flushed) when its time comes on the channel's loop;
/// its promise completes when the released write does. Nothing is dropped. While more than
/// `max_queued_bytes` wait here, the channel is made unwritable through the outbound buffer's
/// user-defined writability flag (so a producer that respects channel_writability_changed
/// stops); it turns writable again once the queue is down to half of that.
///
/// Reads: a read the shaper says must wait pauses reading: auto_read is turned off (and read()
/// calls are held back) until the wait is over; then auto_read is turned back on (or the held
/// read() passed on when the application reads by hand). The message that went over the limit is
/// delivered; the ones after it wait in the transport.
///
/// channel_inactive fails the queued writes with ClosedChannelError; removing the handler from an
/// active channel releases them at once and resumes reading.
class AbstractTrafficShapingHandler : public ChannelDuplexHandler {
 public:
  /// Netty's default bound of the bytes queued per channel (4 MiB).
  static constexpr std::size_t kDefaultMaxQueuedBytes = std::size_t{4} << 20;

  /// The bytes a channel may queue here before it is made unwritable.
  std::size_t max_queued_bytes() const noexcept { return max_queued_bytes_; }

  void handler_removed(ChannelHandlerContext& ctx) override;
  void channel_inactive(ChannelHandlerContext& ctx) override;
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  void read(ChannelHandlerContext& ctx) override;
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;

 protected:
  /// The per-channel state: queued writes, read suspension, timers.
  struct ChannelState;

  /// Queues at most `max_queued_bytes` per channel before making it unwritable.
  explicit AbstractTrafficShapingHandler(std::size_t max_queued_bytes);
  ~AbstractTrafficShapingHandler() override;

  /// The shaper that paces `ctx`'s channel.
  virtual TrafficShaper& shaper_for(ChannelHandlerContext& ctx) = 0;
  /// The state of `ctx`'s channel (made by create_state when the handler was added).
  virtual ChannelState& state_for(ChannelHandlerContext& ctx) = 0;
  /// Makes the state of a channel the handler was just added to.
  static std::shared_ptr<ChannelState> create_state();

 private:
  // Releases every queued write at once, cancels the timers and resumes reading (removal).
  void release_all(ChannelHandlerContext& ctx, ChannelState& st);
  void release_due(ChannelHandlerContext& ctx, ChannelState& st);
  void arm_write_timer(ChannelHandlerContext& ctx, ChannelState& st);
  void resume_reading(ChannelHandlerContext& ctx, ChannelState& st);
  void set_unwritable(ChannelHandlerContext& ctx, ChannelState& st, bool unwritable);

  const std::size_t max_queued_bytes_;
};

}  // namespace trellis
