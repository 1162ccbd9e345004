// WebSocketProtocolHandler (see websocket_protocol_handler.hpp).
#include <trellis/codec/websocket/websocket_protocol_handler.hpp>

#include <trellis/codec/websocket/websocket_close_status.hpp>
#include <trellis/codec/websocket/websocket_frame.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/event_executor.hpp>
#include <trellis/pipeline/future.hpp>

namespace trellis::websocket {

namespace {

// Closes the channel once `written` completed (at once if it has).
void close_after(Channel& channel, const Future<void>& written) {
  written.add_listener([&channel](const Future<void>&) { channel.close(); });
}

}  // namespace

WebSocketProtocolHandler::~WebSocketProtocolHandler() { cancel_deadline(); }

void WebSocketProtocolHandler::cancel_deadline() noexcept {
  if (deadline_.valid()) deadline_.cancel();
  deadline_ = ScheduledFuture<void>();
}

void WebSocketProtocolHandler::start_deadline(ChannelHandlerContext& ctx) {
  if (config_.close_timeout.count() <= 0 || deadline_.valid()) return;
  Channel* channel = &ctx.channel();  // the deadline is cancelled before the channel goes away
  deadline_ = ctx.executor().schedule(config_.close_timeout, [channel] { channel->close(); });
}

void WebSocketProtocolHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (auto* ping = msg.try_get<PingWebSocketFrame>()) {
    if (!close_sent_) ctx.write_and_flush(PongWebSocketFrame(std::move(ping->payload)));
    return;
  }
  if (msg.is<PongWebSocketFrame>()) {
    if (!config_.drop_pong_frames) ctx.fire_channel_read(std::move(msg));
    return;
  }
  if (msg.is<CloseWebSocketFrame>()) {
    on_close(ctx, msg);
    return;
  }
  // Data after the peer's Close breaks RFC 6455 §5.5.1; it is not passed on.
  if (close_received_ && websocket_opcode_of(msg)) return;
  ctx.fire_channel_read(std::move(msg));
}

void WebSocketProtocolHandler::on_close(ChannelHandlerContext& ctx, Message& msg) {
  if (close_received_) return;
  close_received_ = true;
  const auto& frame = msg.get<CloseWebSocketFrame>();
  const std::size_t size = frame.payload.readable_bytes();
  const auto status = frame.status_code();
  const bool valid = size == 0 || (status && is_valid_close_status(*status));
  const bool server = config_.role == WebSocketRole::kServer;
  Channel& channel = ctx.channel();
  if (!close_sent_) {
    // The peer starts the handshake: answer, echoing its status (RFC 6455 §5.5.1).
    close_sent_ = true;
    CloseWebSocketFrame answer;
    if (!valid) {
      answer = CloseWebSocketFrame(close_status::kProtocolError, "invalid close status");
    } else if (status) {
      answer = CloseWebSocketFrame(*status, {});
    }
    ChannelPromise promise = ctx.new_promise();
    close_written_ = promise.future();
    ctx.write_and_flush(std::move(answer), std::move(promise));
    if (server || !valid) {
      close_after(channel, close_written_);
    } else {
      start_deadline(ctx);  // the client waits for the server's TCP close
    }
  } else if (server || !valid) {
    // The peer answered our Close: the handshake is done, the server closes the TCP connection.
    cancel_deadline();
    close_after(channel, close_written_);
  }
  ctx.fire_channel_read(std::move(msg));
}

void WebSocketProtocolHandler::write(ChannelHandlerContext& ctx, Message msg,
                                     ChannelPromise promise) {
  const auto opcode = websocket_opcode_of(msg);
  if (opcode == WebSocketOpcode::kClose) {
    if (close_sent_) {
      promise.try_set_exception(ClosedChannelError("a WebSocket Close frame was sent already"));
      return;
    }
    close_sent_ = true;
    if (promise.is_void()) promise = ctx.new_promise();
    close_written_ = promise.future();
    ctx.write(std::move(msg), std::move(promise));
    start_deadline(ctx);
    return;
  }
  if (close_sent_ && (opcode == WebSocketOpcode::kText || opcode == WebSocketOpcode::kBinary ||
                      opcode == WebSocketOpcode::kContinuation)) {
    promise.try_set_exception(ClosedChannelError("data frame after a WebSocket Close frame"));
    return;
  }
  ctx.write(std::move(msg), std::move(promise));
}

void WebSocketProtocolHandler::channel_inactive(ChannelHandlerContext& ctx) {
  cancel_deadline();
  ctx.fire_channel_inactive();
}

void WebSocketProtocolHandler::handler_removed(ChannelHandlerContext& /*ctx*/) {
  cancel_deadline();
}

}  // namespace trellis::websocket
