// Http2FrameCodec: the connection level of an HTTP/2 endpoint as one duplex handler. Inbound it
// turns bytes into frame messages (Http2HeadersFrame, Http2DataFrame, ...) and outbound frame
// messages into bytes, and in between it keeps the connection's state: the preface and SETTINGS
// exchange, stream states and ids, flow control in both directions, PING answers, GOAWAY and
// RST_STREAM, header validation and the flood limits of a public server.
#pragma once

#include <cstdint>
#include <memory>

#include <trellis/codec/http2/http2_codec_events.hpp>
#include <trellis/codec/http2/http2_frame_codec_options.hpp>
#include <trellis/codec/http2/http2_frames.hpp>
#include <trellis/codec/http2/http2_stream_state.hpp>
#include <trellis/pipeline/channel_handler.hpp>

namespace trellis::http2 {

/// The HTTP/2 connection codec (RFC 9113), Netty's Http2FrameCodec. Put it first in the pipeline
/// (after TLS); the application behind it reads and writes frame messages.
///
/// Inbound, the application reads Http2HeadersFrame (a stream's header block, decoded),
/// Http2DataFrame (a slice of the bytes read), Http2SettingsFrame (also the peer's ACK),
/// Http2PingFrame (already answered), Http2ResetFrame, Http2GoAwayFrame and Http2UnknownFrame,
/// plus the user events of http2_codec_events.hpp. PRIORITY and WINDOW_UPDATE are handled here.
///
/// Outbound, it writes the same types: Http2HeadersFrame on a new stream id of its side (odd for
/// a client) opens the stream; Http2DataFrame is sent as far as the flow-control windows allow
/// and queued beyond (its promise completes once its last byte was written); Http2ResetFrame
/// resets a stream; Http2SettingsFrame changes this endpoint's settings (applied on the peer's
/// ACK); Http2PingFrame, Http2PriorityFrame and Http2UnknownFrame are sent as they are;
/// Http2GoAwayFrame sends GOAWAY with its code and debug data, the last stream id being the
/// codec's; Http2WindowUpdateFrame on a stream means "the application consumed that many bytes"
/// (consume_bytes()), on stream 0 it enlarges the connection's receive window. Writes that break
/// the protocol (DATA on a closed stream, a stream id that cannot be opened, a new stream after
/// the peer's GOAWAY or beyond its concurrency limit) fail their promise with Http2Exception.
/// Other messages pass through.
///
/// Peer errors: a connection error (RFC 9113 §5.4.1) sends GOAWAY with its code and the last
/// stream id processed, then closes the channel; a stream error (§5.4.2) sends RST_STREAM and
/// fires Http2StreamErrorEvent, and the connection goes on. Neither is passed on as an exception.
///
/// Not sharable; every member function must be called on the channel's loop.
class Http2FrameCodec : public ChannelDuplexHandler {
 public:
  /// A codec with `options`. Throws InvalidArgumentError for an out-of-range max frame size.
  explicit Http2FrameCodec(Http2FrameCodecOptions options = {});
  ~Http2FrameCodec() override;

  /// The options the codec was made with.
  const Http2FrameCodecOptions& options() const noexcept;

  /// @name State
  ///@{
  /// The state of stream `id` (kIdle for an id not used yet, kClosed for one that is done).
  Http2StreamState stream_state(std::uint32_t id) const noexcept;
  /// Streams open or half-closed, both sides together.
  std::size_t active_streams() const noexcept;
  /// The next stream id this endpoint may open (odd for a client); 0 when ids are exhausted.
  std::uint32_t next_stream_id() const noexcept;
  /// The highest stream id the peer opened.
  std::uint32_t last_peer_stream_id() const noexcept;
  /// The connection's send window (negative is possible).
  std::int64_t connection_send_window() const noexcept;
  /// Stream `id`'s send window, or 0 when it is not open.
  std::int64_t stream_send_window(std::uint32_t id) const noexcept;
  /// The connection's receive window: how much the peer may still send.
  std::int64_t connection_receive_window() const noexcept;
  /// Stream `id`'s receive window, or 0 when it is not open.
  std::int64_t stream_receive_window(std::uint32_t id) const noexcept;
  /// Data written on stream `id` and waiting for window, in octets.
  std::uint64_t stream_queued_bytes(std::uint32_t id) const noexcept;
  /// True when stream `id` may send and data written now would go out at once: nothing is
  /// queued on it and both its window and the connection's are positive.
  bool is_stream_writable(std::uint32_t id) const noexcept;
  /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS (unlimited until it sends one).
  std::uint32_t peer_max_concurrent_streams() const noexcept;
  /// The peer's SETTINGS_INITIAL_WINDOW_SIZE.
  std::uint32_t peer_initial_window_size() const noexcept;
  /// True once this endpoint sent GOAWAY.
  bool go_away_sent() const noexcept;
  /// True once the peer sent GOAWAY.
  bool go_away_received() const noexcept;
  ///@}

  /// @name Actions
  ///@{
  /// The application consumed `n` octets of the data read on stream `id`: the windows are given
  /// back to the peer with WINDOW_UPDATE frames once enough was consumed (and flushed at the end
  /// of the read, or at once when called outside a read). Only needed without auto_consume;
  /// unknown streams are ignored (their octets went back to the connection when they closed).
  void consume_bytes(std::uint32_t id, std::uint32_t n);
  /// Starts a graceful shutdown: GOAWAY with 2^31-1 and a PING; once the PING is answered,
  /// GOAWAY with the last stream id processed (a client: GOAWAY 0 at once). Open streams go on
  /// until they end; then, or after options().graceful_shutdown_timeout, the channel closes.
  void start_graceful_shutdown();
  ///@}

  /// Keeps the channel's context; starts the connection when the channel is already active.
  void handler_added(ChannelHandlerContext& ctx) override;
  /// Cancels the codec's timers.
  void handler_removed(ChannelHandlerContext& ctx) override;
  /// Sends the preface (client) and the SETTINGS.
  void channel_active(ChannelHandlerContext& ctx) override;
  /// Closes every stream (Http2StreamClosedEvent each, queued writes failed), then passes on.
  void channel_inactive(ChannelHandlerContext& ctx) override;
  /// Parses frames out of the bytes read (other messages pass through).
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  /// Flushes what the codec wrote by itself during the read, then passes on.
  void channel_read_complete(ChannelHandlerContext& ctx) override;
  /// Tracks writability for the control-frame flood limit, then passes on.
  void channel_writability_changed(ChannelHandlerContext& ctx) override;
  /// Encodes a frame message (see the class comment).
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;
  /// Sends GOAWAY (NO_ERROR) unless one was sent, then closes.
  void close(ChannelHandlerContext& ctx, ChannelPromise promise) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trellis::http2
