// ChunkedWriteHandler: writes ChunkedInputs (files, streams) chunk by chunk, only while the channel
// is writable, so a large transfer holds about one high water mark of memory (Netty's).
#pragma once

#include <cstdint>
#include <exception>
#include <memory>

#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/chunked_input.hpp>
#include <trellis/pipeline/detail/ring_buffer.hpp>

namespace trellis {

class EventExecutor;

/// Writes ChunkedInputs (files, streams) chunk by chunk, only while the channel is writable, so a
/// large transfer holds about one high water mark of memory.
///
/// Every write is queued here until a flush. A flush (and the channel turning writable again, and
/// resume_transfer()) writes the queue in order while channel().is_writable(): a plain message is
/// passed on with its promise; a ChunkedInputPtr message is read one chunk at a time, and each
/// chunk is written and flushed, so at most one chunk beyond the high water mark is queued in the
/// outbound buffer. Messages written after a chunked input wait until the input is done. A
/// FileRegion is written as a ChunkedFile over its remaining bytes (the read-based path for
/// channels that cannot sendfile; the region's descriptor is duplicated, not taken).
///
/// The promise of a chunked write succeeds when the write of its last chunk succeeded (the input
/// is then closed). It fails, and the input is closed, when read_chunk() throws (with that
/// exception), when a chunk's write fails (with its cause), or when the channel closes before the
/// end (ClosedChannelError). A failed chunked write without a promise is fired as exception_caught,
/// except ClosedChannelError. An input whose read_chunk() returned no data while not at its end
/// suspends the transfer until resume_transfer(). channel_inactive closes and fails every input
/// and message still queued; so does removing the handler (IllegalStateError).
///
/// Threading: like every handler, its callbacks run on the channel's event loop;
/// resume_transfer() may be called from any thread.
///
/// Not sharable. Place it after the encoders that make ByteBufs (a chunk is a ByteBuf).
class ChunkedWriteHandler : public ChannelDuplexHandler {
 public:
  /// A handler with an empty queue.
  ChunkedWriteHandler();
  /// Drops whatever is still queued (channel_inactive or the removal already failed it).
  ~ChunkedWriteHandler() override;

  /// Continues a transfer that stopped because its input had no data. Callable from any thread
  /// (posted to the channel's loop); does nothing before the handler is added.
  void resume_transfer();

  /// Writes waiting in the handler (chunked or not), for tests and diagnostics.
  std::size_t pending_writes() const noexcept { return queue_.size(); }

  void handler_added(ChannelHandlerContext& ctx) override;
  void handler_removed(ChannelHandlerContext& ctx) override;
  void channel_inactive(ChannelHandlerContext& ctx) override;
  void channel_writability_changed(ChannelHandlerContext& ctx) override;
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;
  void flush(ChannelHandlerContext& ctx) override;

 private:
  struct Transfer;  // the state of one chunked write, shared with its chunks' listeners
  struct PendingWrite {
    Message msg;  // a plain message (empty for a chunked input)
    ChannelPromise promise;
    std::shared_ptr<Transfer> transfer;  // a chunked input (null for a plain message)
  };

  void do_flush(ChannelHandlerContext& ctx);
  // One pass over the queue; returns whether something was written that still needs a flush.
  bool write_queued(ChannelHandlerContext& ctx);
  // Closes and fails everything queued (error null: ClosedChannelError).
  void discard(std::exception_ptr error);

  detail::RingBuffer<PendingWrite> queue_;
  ChannelHandlerContext* ctx_ = nullptr;
  // For resume_transfer() from another thread: set by handler_added.
  EventExecutor* executor_ = nullptr;
  std::weak_ptr<ChannelHandler> self_;
  // do_flush is re-entered when a write makes the channel writable again (the transport drains
  // inline) or completes a listener: the outer call loops once more instead.
  bool flushing_ = false;
  bool flush_again_ = false;
};

}  // namespace trellis
