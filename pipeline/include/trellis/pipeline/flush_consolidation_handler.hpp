// FlushConsolidationHandler: coalesces explicit flushes so that a pipelining peer's batch of
// requests is answered with one write to the socket instead of one per response (Netty's
// FlushConsolidationHandler).
#pragma once

#include <cstddef>

#include <trellis/pipeline/channel_handler.hpp>

namespace trellis {

/// Coalesces explicit flushes: while a read is in progress (between the first channel_read of a
/// batch and its channel_read_complete), flushes are held back and done once at the end of the
/// batch, or every `explicit_flush_after_flushes` flushes, whichever comes first. An application
/// that flushes each response then reaches the transport once per batch of pipelined requests.
///
/// Outside a read, a flush goes through at once; with `consolidate_when_no_read_in_progress` it is
/// held instead until a task queued on the channel's loop runs (so flushes from one task of the
/// loop, or from several queued behind each other, become one), or until the count is reached.
///
/// Held flushes are done before the channel closes or disconnects, when an exception passes,
/// when the channel turns unwritable (so the buffer can drain) and when the handler is removed.
/// Put it first (nearest the transport) in the pipeline. Not sharable.
class FlushConsolidationHandler : public ChannelDuplexHandler {
 public:
  /// Netty's default for explicit_flush_after_flushes.
  static constexpr std::size_t kDefaultExplicitFlushAfterFlushes = 256;

  /// Flushes after every `explicit_flush_after_flushes` held flushes (> 0, else
  /// InvalidArgumentError); `consolidate_when_no_read_in_progress` also holds flushes made outside
  /// a read until a task of the loop does them.
  explicit FlushConsolidationHandler(
      std::size_t explicit_flush_after_flushes = kDefaultExplicitFlushAfterFlushes,
      bool consolidate_when_no_read_in_progress = false);

  /// The flush count after which a held flush goes through.
  std::size_t explicit_flush_after_flushes() const noexcept {
    return explicit_flush_after_flushes_;
  }
  /// Whether flushes outside a read are held until a task of the loop runs.
  bool consolidate_when_no_read_in_progress() const noexcept { return consolidate_no_read_; }
  /// Flushes held back so far (for tests and diagnostics).
  std::size_t pending_flushes() const noexcept { return flush_pending_count_; }

  void handler_added(ChannelHandlerContext& ctx) override;
  void handler_removed(ChannelHandlerContext& ctx) override;
  void flush(ChannelHandlerContext& ctx) override;
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  void channel_read_complete(ChannelHandlerContext& ctx) override;
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) override;
  void disconnect(ChannelHandlerContext& ctx, ChannelPromise promise) override;
  void close(ChannelHandlerContext& ctx, ChannelPromise promise) override;
  void channel_writability_changed(ChannelHandlerContext& ctx) override;

 private:
  void flush_now(ChannelHandlerContext& ctx);
  void flush_if_needed(ChannelHandlerContext& ctx);
  void reset_read_and_flush_if_needed(ChannelHandlerContext& ctx);
  void schedule_flush(ChannelHandlerContext& ctx);

  const std::size_t explicit_flush_after_flushes_;
  const bool consolidate_no_read_;
  std::size_t flush_pending_count_ = 0;
  bool read_in_progress_ = false;
  // A task of the loop will do the held flushes (consolidate_when_no_read_in_progress).
  bool flush_scheduled_ = false;
  // handler_removed ran: a queued flush task leaves the (possibly freed) context alone.
  bool removed_ = false;
};

}  // namespace trellis
