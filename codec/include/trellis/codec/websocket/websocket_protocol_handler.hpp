// WebSocketProtocolHandler: the control-frame side of a WebSocket connection: pings answered,
// pongs dropped, and the close handshake of RFC 6455 §5.5.1 and §7 with a deadline.
#pragma once

#include <chrono>
#include <cstdint>

#include <trellis/codec/websocket/websocket_role.hpp>
#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/future.hpp>
#include <trellis/pipeline/scheduled_future.hpp>

namespace trellis::websocket {

/// WebSocketProtocolHandler's settings.
struct WebSocketProtocolConfig {
  /// The end of the connection served: a server closes the TCP connection once the close
  /// handshake is done, a client waits for the server to do it (RFC 6455 §7.1.1).
  WebSocketRole role = WebSocketRole::kServer;
  /// How long after sending a Close frame the connection waits for the rest of the handshake (the
  /// peer's Close, or for a client the server's TCP close) before it closes the channel itself.
  /// Measured on the channel's loop clock. 0 or less: no deadline.
  std::chrono::milliseconds close_timeout{10000};
  /// Drop pong frames (true) or pass them on to the next handler.
  bool drop_pong_frames = true;
};

/// Handles the control frames of a WebSocket connection (Netty's WebSocketProtocolHandler and
/// WebSocketCloseFrameHandler in one). Inbound:
/// - a PingWebSocketFrame is answered with a PongWebSocketFrame carrying its payload (and not
///   passed on);
/// - a PongWebSocketFrame is dropped (or passed on, see the config);
/// - a CloseWebSocketFrame: unless a Close was sent already, it is answered, echoing a valid status
///   code (without the reason), an empty Close for an empty one, or 1002 for a code that may not
///   appear on the wire (is_valid_close_status) or a 1-byte payload. Then the frame is passed on,
///   so the application learns the peer's status. A server closes the channel once its Close went
///   out; a client waits for the server's TCP close, at most close_timeout.
/// Outbound, a CloseWebSocketFrame written by the application starts the handshake: the deadline
/// runs from then; a second Close, and any data frame after a Close, fail their write with
/// ClosedChannelError (RFC 6455 §5.5.1: nothing follows a Close). On the channel's loop; not
/// sharable.
class WebSocketProtocolHandler : public ChannelDuplexHandler {
 public:
  /// A handler with `config`.
  explicit WebSocketProtocolHandler(WebSocketProtocolConfig config = {}) noexcept
      : config_(config) {}
  /// Cancels the close deadline.
  ~WebSocketProtocolHandler() override;

  /// The settings.
  const WebSocketProtocolConfig& config() const noexcept { return config_; }
  /// True once a Close frame was sent (by the application or as an answer).
  bool close_sent() const noexcept { return close_sent_; }
  /// True once the peer's Close frame was received.
  bool close_received() const noexcept { return close_received_; }

  /// Answers pings, drops pongs, runs the close handshake; passes everything else on.
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  /// Cancels the close deadline and passes the event on.
  void channel_inactive(ChannelHandlerContext& ctx) override;
  /// Cancels the close deadline.
  void handler_removed(ChannelHandlerContext& ctx) override;
  /// Starts the close handshake on an outbound Close; refuses frames after a Close.
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;

 private:
  void on_close(ChannelHandlerContext& ctx, Message& msg);
  void start_deadline(ChannelHandlerContext& ctx);
  void cancel_deadline() noexcept;

  WebSocketProtocolConfig config_;
  ScheduledFuture<void> deadline_;
  Future<void> close_written_;  // the write of the Close frame this end sent
  bool close_sent_ = false;
  bool close_received_ = false;
};

}  // namespace trellis::websocket
