// Flush coalescing (see flush_consolidation_handler.hpp).
#include <trellis/pipeline/flush_consolidation_handler.hpp>

#include <memory>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/event_executor.hpp>

namespace trellis {

FlushConsolidationHandler::FlushConsolidationHandler(std::size_t explicit_flush_after_flushes,
                                                     bool consolidate_when_no_read_in_progress)
    : explicit_flush_after_flushes_(explicit_flush_after_flushes),
      consolidate_no_read_(consolidate_when_no_read_in_progress) {
  if (explicit_flush_after_flushes == 0) {
    throw InvalidArgumentError(
        "FlushConsolidationHandler: explicit_flush_after_flushes must be > 0");
  }
}

void FlushConsolidationHandler::handler_added(ChannelHandlerContext&) { removed_ = false; }

void FlushConsolidationHandler::handler_removed(ChannelHandlerContext& ctx) {
  flush_if_needed(ctx);
  removed_ = true;
  flush_scheduled_ = false;
}

void FlushConsolidationHandler::flush(ChannelHandlerContext& ctx) {
  if (read_in_progress_) {
    // channel_read_complete flushes at the end of the batch.
    if (++flush_pending_count_ == explicit_flush_after_flushes_) flush_now(ctx);
  } else if (consolidate_no_read_) {
    if (++flush_pending_count_ == explicit_flush_after_flushes_) {
      flush_now(ctx);
    } else {
      schedule_flush(ctx);
    }
  } else {
    flush_now(ctx);
  }
}

void FlushConsolidationHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  read_in_progress_ = true;
  ctx.fire_channel_read(std::move(msg));
}

void FlushConsolidationHandler::channel_read_complete(ChannelHandlerContext& ctx) {
  // The handlers after this one usually flush from here: the batch ends after them.
  ctx.fire_channel_read_complete();
  reset_read_and_flush_if_needed(ctx);
}

void FlushConsolidationHandler::exception_caught(ChannelHandlerContext& ctx,
                                                 std::exception_ptr error) {
  reset_read_and_flush_if_needed(ctx);
  ctx.fire_exception_caught(std::move(error));
}

void FlushConsolidationHandler::disconnect(ChannelHandlerContext& ctx, ChannelPromise promise) {
  reset_read_and_flush_if_needed(ctx);
  ctx.disconnect(std::move(promise));
}

void FlushConsolidationHandler::close(ChannelHandlerContext& ctx, ChannelPromise promise) {
  reset_read_and_flush_if_needed(ctx);
  ctx.close(std::move(promise));
}

void FlushConsolidationHandler::channel_writability_changed(ChannelHandlerContext& ctx) {
  // Unwritable: what is held must reach the transport for the buffer to drain at all.
  if (!ctx.channel().is_writable()) flush_if_needed(ctx);
  ctx.fire_channel_writability_changed();
}

void FlushConsolidationHandler::flush_now(ChannelHandlerContext& ctx) {
  flush_scheduled_ = false;
  flush_pending_count_ = 0;
  ctx.flush();
}

void FlushConsolidationHandler::flush_if_needed(ChannelHandlerContext& ctx) {
  if (flush_pending_count_ > 0) flush_now(ctx);
}

void FlushConsolidationHandler::reset_read_and_flush_if_needed(ChannelHandlerContext& ctx) {
  read_in_progress_ = false;
  flush_if_needed(ctx);
}

void FlushConsolidationHandler::schedule_flush(ChannelHandlerContext& ctx) {
  if (flush_scheduled_) return;
  flush_scheduled_ = true;
  // The task holds the handler (a shared_ptr copy: no allocation), and leaves the context alone
  // once the handler was removed (flush_now cleared the flag when it flushed meanwhile).
  ctx.executor().execute([this, keep = ctx.handler_ptr(), &ctx] {
    if (removed_ || !flush_scheduled_) return;
    flush_scheduled_ = false;
    if (flush_pending_count_ > 0 && !read_in_progress_) flush_now(ctx);
  });
}

}  // namespace trellis
