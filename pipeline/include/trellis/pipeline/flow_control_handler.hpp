// FlowControlHandler: with auto_read off, lets exactly one message through per read(), even when
// a decoder before it made many out of one buffer (Netty's FlowControlHandler).
#pragma once

#include <cstddef>
#include <cstdint>

#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/detail/ring_buffer.hpp>

namespace trellis {

/// With auto_read off, lets exactly one message through per read(), even when a decoder before it
/// made many out of one buffer.
///
/// Inbound messages are queued here. A read() delivers the next queued message if there is one;
/// otherwise it is passed on towards the transport and the next message to arrive is delivered.
/// With auto_read on the queue is drained as messages arrive, so the handler is transparent.
/// channel_read_complete: a transport batch whose messages all went through passes its
/// read_complete on; one that left messages queued has it held back until a read() drains the
/// queue (so the messages of one batch may be spread over several read() calls and end with one
/// channel_read_complete). Unlike Netty's, it does not add a read_complete after each message
/// while auto_read is on.
///
/// Removing the handler delivers what is queued; channel_inactive drops it. Not sharable.
class FlowControlHandler : public ChannelDuplexHandler {
 public:
  /// A handler with an empty queue.
  FlowControlHandler() = default;

  /// Messages waiting for a read() (for tests and diagnostics).
  std::size_t queued_messages() const noexcept { return queue_.size(); }
  /// True when no message waits for a read().
  bool is_queue_empty() const noexcept { return queue_.empty(); }

  void handler_removed(ChannelHandlerContext& ctx) override;
  void channel_inactive(ChannelHandlerContext& ctx) override;
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  void channel_read_complete(ChannelHandlerContext& ctx) override;
  void read(ChannelHandlerContext& ctx) override;

 private:
  // Delivers at least min_consume messages (all while auto_read is on); fires
  // channel_read_complete when it delivered some and the queue drained. Returns how many.
  std::size_t dequeue(ChannelHandlerContext& ctx, std::size_t min_consume);

  detail::RingBuffer<Message> queue_;
  // A read() found nothing queued: the next message to arrive goes through at once.
  bool should_consume_ = false;
  // Bumped whenever the queue drains, so a dequeue() re-entered from a handler's read() ends the
  // outer one (which must not fire a second channel_read_complete).
  std::uint64_t drained_ = 0;
  // A batch's read_complete was held back while messages were queued.
  bool complete_owed_ = false;
};

}  // namespace trellis
