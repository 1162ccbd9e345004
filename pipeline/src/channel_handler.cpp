// The pass-the-event-on defaults of the handler interfaces (see channel_handler.hpp).
#include <trellis/pipeline/channel_handler.hpp>

#include <trellis/pipeline/channel_handler_context.hpp>

namespace trellis {

void ChannelHandler::handler_added(ChannelHandlerContext&) {}
void ChannelHandler::handler_removed(ChannelHandlerContext&) {}
void ChannelHandler::exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) {
  ctx.fire_exception_caught(std::move(error));
}

void ChannelInboundHandler::channel_registered(ChannelHandlerContext& ctx) {
  ctx.fire_channel_registered();
}
void ChannelInboundHandler::channel_unregistered(ChannelHandlerContext& ctx) {
  ctx.fire_channel_unregistered();
}
void ChannelInboundHandler::channel_active(ChannelHandlerContext& ctx) {
  ctx.fire_channel_active();
}
void ChannelInboundHandler::channel_inactive(ChannelHandlerContext& ctx) {
  ctx.fire_channel_inactive();
}
void ChannelInboundHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  ctx.fire_channel_read(std::move(msg));
}
void ChannelInboundHandler::channel_read_complete(ChannelHandlerContext& ctx) {
  ctx.fire_channel_read_complete();
}
void ChannelInboundHandler::user_event_triggered(ChannelHandlerContext& ctx, Message event) {
  ctx.fire_user_event_triggered(std::move(event));
}
void ChannelInboundHandler::channel_writability_changed(ChannelHandlerContext& ctx) {
  ctx.fire_channel_writability_changed();
}

void ChannelOutboundHandler::bind(ChannelHandlerContext& ctx, const SocketAddress& local,
                                  ChannelPromise promise) {
  ctx.bind(local, std::move(promise));
}
void ChannelOutboundHandler::connect(ChannelHandlerContext& ctx, const SocketAddress& remote,
                                     const std::optional<SocketAddress>& local,
                                     ChannelPromise promise) {
  ctx.connect(remote, local, std::move(promise));
}
void ChannelOutboundHandler::disconnect(ChannelHandlerContext& ctx, ChannelPromise promise) {
  ctx.disconnect(std::move(promise));
}
void ChannelOutboundHandler::close(ChannelHandlerContext& ctx, ChannelPromise promise) {
  ctx.close(std::move(promise));
}
void ChannelOutboundHandler::read(ChannelHandlerContext& ctx) { ctx.read(); }
void ChannelOutboundHandler::write(ChannelHandlerContext& ctx, Message msg,
                                   ChannelPromise promise) {
  ctx.write(std::move(msg), std::move(promise));
}
void ChannelOutboundHandler::flush(ChannelHandlerContext& ctx) { ctx.flush(); }
void ChannelOutboundHandler::shutdown_output(ChannelHandlerContext& ctx, ChannelPromise promise) {
  ctx.shutdown_output(std::move(promise));
}

}  // namespace trellis
