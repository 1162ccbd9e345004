// Read timeouts on top of reader-idle detection (see read_timeout_handler.hpp).
#include <trellis/pipeline/read_timeout_handler.hpp>

#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/error.hpp>

namespace trellis {

void ReadTimeoutHandler::channel_idle(ChannelHandlerContext& ctx, IdleStateEvent event) {
  if (event.state == IdleState::reader_idle) read_timed_out(ctx);
}

void ReadTimeoutHandler::read_timed_out(ChannelHandlerContext& ctx) {
  if (closed_) return;
  closed_ = true;
  ctx.fire_exception_caught(std::make_exception_ptr(ReadTimeoutError()));
  ctx.close();
}

}  // namespace trellis
