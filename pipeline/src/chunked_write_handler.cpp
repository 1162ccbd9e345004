// Writability-driven chunked writes (see chunked_write_handler.hpp).
#include <trellis/pipeline/chunked_write_handler.hpp>

#include <utility>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/pipeline/chunked_file.hpp>
#include <trellis/pipeline/chunked_stream.hpp>
#include <trellis/pipeline/detail/watched_write.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/event_executor.hpp>
#include <trellis/pipeline/future.hpp>

namespace trellis {

struct ChunkedWriteHandler::Transfer {
  ChunkedInputPtr input;
  ChannelPromise promise;
  ChannelPipeline* pipeline;  // null once the handler is destroyed: nothing to report to
  bool done = false;          // completed (success or failure): later chunk outcomes are ignored

  void close_input() noexcept {
    try {
      input->close();
    } catch (...) {
      // A failing close must not hide the transfer's outcome.
    }
  }
  void succeed() noexcept {
    if (done) return;
    done = true;
    close_input();
    promise.try_set_value();
  }
  void fail(std::exception_ptr error) noexcept {
    if (done) return;
    done = true;
    close_input();
    if (!promise.is_void()) {
      promise.try_set_exception(std::move(error));
    } else if (pipeline != nullptr && !detail::is_closed_channel_error(error)) {
      pipeline->fire_exception_caught(std::move(error));
    }
  }
};

namespace {

// The input a message holds, or null when it holds none.
ChunkedInputPtr chunked_input_of(Message& msg) {
  if (auto* p = msg.try_get<ChunkedInputPtr>()) return std::move(*p);
  if (auto* p = msg.try_get<std::shared_ptr<ChunkedFile>>()) return std::move(*p);
  if (auto* p = msg.try_get<std::shared_ptr<ChunkedStream>>()) return std::move(*p);
  // The read-based path for a channel that cannot sendfile: the region's remaining bytes are
  // read with pread, chunk by chunk, from a duplicate of its descriptor.
  if (auto* p = msg.try_get<FileRegion>()) return std::make_shared<ChunkedFile>(*p);
  return nullptr;
}

}  // namespace

ChunkedWriteHandler::ChunkedWriteHandler() = default;

ChunkedWriteHandler::~ChunkedWriteHandler() {
  // Normally handler_removed or channel_inactive emptied the queue already; if not, the pipeline
  // may be gone, so failures are not fired into it.
  for (PendingWrite& w : queue_) {
    if (w.transfer) w.transfer->pipeline = nullptr;
  }
  discard(std::make_exception_ptr(IllegalStateError("ChunkedWriteHandler destroyed")));
}

void ChunkedWriteHandler::handler_added(ChannelHandlerContext& ctx) {
  ctx_ = &ctx;
  executor_ = &ctx.executor();
  self_ = ctx.handler_ptr();
}

void ChunkedWriteHandler::handler_removed(ChannelHandlerContext&) {
  ctx_ = nullptr;
  discard(std::make_exception_ptr(IllegalStateError("ChunkedWriteHandler removed")));
}

void ChunkedWriteHandler::resume_transfer() {
  EventExecutor* executor = executor_;
  if (executor == nullptr) return;
  if (executor->in_event_loop()) {
    if (ctx_ != nullptr) do_flush(*ctx_);
    return;
  }
  // `self` keeps the handler alive while the task runs; a destroyed one is left alone.
  executor->execute([this, weak = self_] {
    if (auto self = weak.lock(); self && ctx_ != nullptr) do_flush(*ctx_);
  });
}

void ChunkedWriteHandler::write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  PendingWrite pending;
  if (ChunkedInputPtr input = chunked_input_of(msg)) {
    pending.transfer =
        std::make_shared<Transfer>(Transfer{std::move(input), std::move(promise), &ctx.pipeline()});
  } else {
    pending.msg = std::move(msg);
    pending.promise = std::move(promise);
  }
  queue_.push_back(std::move(pending));
}

void ChunkedWriteHandler::flush(ChannelHandlerContext& ctx) { do_flush(ctx); }

void ChunkedWriteHandler::channel_writability_changed(ChannelHandlerContext& ctx) {
  if (ctx.channel().is_writable()) do_flush(ctx);
  ctx.fire_channel_writability_changed();
}

void ChunkedWriteHandler::channel_inactive(ChannelHandlerContext& ctx) {
  discard(nullptr);
  ctx.fire_channel_inactive();
}

void ChunkedWriteHandler::do_flush(ChannelHandlerContext& ctx) {
  if (flushing_) {
    flush_again_ = true;
    return;
  }
  flushing_ = true;
  bool needs_flush = false;
  try {
    do {
      flush_again_ = false;
      needs_flush = write_queued(ctx) || needs_flush;
    } while (flush_again_ && ctx.channel().is_active());
  } catch (...) {
    flushing_ = false;
    throw;
  }
  flushing_ = false;
  if (needs_flush) ctx.flush();
}

bool ChunkedWriteHandler::write_queued(ChannelHandlerContext& ctx) {
  Channel& channel = ctx.channel();
  if (!channel.is_active()) {
    discard(nullptr);
    return false;
  }
  // As in Netty, a flush that wrote nothing is passed on (writes made by handlers closer to the
  // head wait for it); a chunk is flushed as it is written.
  bool needs_flush = true;
  while (!queue_.empty() && channel.is_writable()) {
    PendingWrite& head = queue_.front();
    if (!head.transfer) {
      PendingWrite pending = queue_.take_front();
      ctx.write(std::move(pending.msg), std::move(pending.promise));
      needs_flush = true;
    } else {
      std::shared_ptr<Transfer> transfer = head.transfer;
      if (transfer->done) {  // a chunk's write failed meanwhile
        queue_.pop_front();
        continue;
      }
      ByteBuf chunk;
      bool end = false;
      try {
        chunk = transfer->input->read_chunk(ctx.alloc());
        end = transfer->input->is_end_of_input();
      } catch (...) {
        queue_.pop_front();
        transfer->fail(std::current_exception());
        continue;
      }
      // No data now and more to come: wait for resume_transfer().
      if (!chunk.is_readable() && !end) break;
      if (end) queue_.pop_front();
      // Each chunk is flushed at once, so the outbound buffer's pending bytes (and with them the
      // channel's writability) follow the transfer chunk by chunk.
      ChannelPromise chunk_promise = ctx.new_promise();
      chunk_promise.future().add_listener(
          [this, weak = self_, transfer, end](const Future<void>& f) {
            if (f.is_success()) {
              if (end) transfer->succeed();
              return;
            }
            transfer->fail(f.cause());
            // The writes queued behind the failed input go on (inside do_flush this only asks the
            // running call for one more pass).
            if (auto self = weak.lock(); self && ctx_ != nullptr) do_flush(*ctx_);
          });
      ctx.write_and_flush(std::move(chunk), std::move(chunk_promise));
      needs_flush = false;
    }
    if (!channel.is_active()) {
      discard(nullptr);
      break;
    }
  }
  return needs_flush;
}

void ChunkedWriteHandler::discard(std::exception_ptr error) {
  if (!error) error = std::make_exception_ptr(ClosedChannelError());
  // Failing a promise runs listeners, which may write again: take the queue first.
  detail::RingBuffer<PendingWrite> pending = std::move(queue_);
  queue_.clear();
  for (PendingWrite& w : pending) {
    if (w.transfer) {
      w.transfer->fail(error);
    } else {
      w.promise.try_set_exception(error);
    }
  }
}

}  // namespace trellis
