// One message per read() (see flow_control_handler.hpp).
#include <trellis/pipeline/flow_control_handler.hpp>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

namespace trellis {

void FlowControlHandler::handler_removed(ChannelHandlerContext& ctx) {
  if (!queue_.empty()) dequeue(ctx, queue_.size());
  queue_.clear();
}

void FlowControlHandler::channel_inactive(ChannelHandlerContext& ctx) {
  queue_.clear();
  complete_owed_ = false;
  ctx.fire_channel_inactive();
}

void FlowControlHandler::read(ChannelHandlerContext& ctx) {
  if (dequeue(ctx, 1) == 0) {
    // Nothing queued: ask the transport, and relay the next message that arrives.
    should_consume_ = true;
    ctx.read();
  } else if (ctx.channel().config().auto_read()) {
    ctx.read();
  }
}

void FlowControlHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  queue_.push_back(std::move(msg));
  // This message answers an earlier read(): it goes through whatever auto_read says.
  const std::size_t min_consume = should_consume_ ? 1 : 0;
  should_consume_ = false;
  dequeue(ctx, min_consume);
}

void FlowControlHandler::channel_read_complete(ChannelHandlerContext& ctx) {
  // While messages wait, the batch is not complete downstream: dequeue() fires the
  // read_complete when a read() drains the queue.
  if (queue_.empty()) {
    ctx.fire_channel_read_complete();
  } else {
    complete_owed_ = true;
  }
}

std::size_t FlowControlHandler::dequeue(ChannelHandlerContext& ctx, std::size_t min_consume) {
  const std::uint64_t epoch = drained_;
  std::size_t consumed = 0;
  while (epoch == drained_ && !queue_.empty() &&
         (consumed < min_consume || ctx.channel().config().auto_read())) {
    ++consumed;
    ctx.fire_channel_read(queue_.take_front());
  }
  if (epoch == drained_ && queue_.empty()) {
    ++drained_;
    // Inside a transport batch (channel_read) the batch's own read_complete follows; after a
    // read() it was held back above.
    if (consumed > 0 && complete_owed_) {
      complete_owed_ = false;
      ctx.fire_channel_read_complete();
    }
  }
  return consumed;
}

}  // namespace trellis
