// Http2FrameCodec's private state: the connection's settings, windows, stream table, flood
// counters and timers, and the member functions that work on them, defined in
// http2_frame_codec_connection.cpp (start, shutdown, streams, flow control),
// http2_frame_codec_inbound.cpp (frames read) and http2_frame_codec.cpp (frames written).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <trellis/codec/http2/http2_frame_codec.hpp>
#include <trellis/codec/http2/http2_frame_reader.hpp>
#include <trellis/codec/http2/http2_frame_writer.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/scheduled_future.hpp>

#include "http2_stream_table.hpp"

namespace trellis::http2 {

struct Http2FrameCodec::Impl final : Http2FrameListener {
  using Http2Stream = detail::Http2Stream;
  using PendingWrite = detail::PendingWrite;
  using State = Http2StreamState;

  static constexpr std::int64_t kMaxWindow = kHttp2MaxWindowSize;
  static constexpr std::uint32_t kDefaultWindow = 65535;
  static constexpr std::uint32_t kMaxStreamId = 0x7fffffff;
  // The opaque data of the PING that measures the round trip of a graceful shutdown.
  static constexpr std::uint64_t kGracefulShutdownPing = 0x7472656c6c697332;  // "trellis2"
  static constexpr std::size_t kRecentlyReset = 32;
  static constexpr std::size_t kSpareHeaders = 8;
  static constexpr std::size_t kMaxDebugData = 256;

  [[noreturn]] static void connection_error(Http2Error code, const std::string& text);
  [[noreturn]] static void stream_error(std::uint32_t id, Http2Error code, const std::string& text);
  static std::string sid(std::uint32_t id);
  static Http2FrameReaderOptions reader_options(const Http2FrameCodecOptions& o);

  explicit Impl(Http2FrameCodecOptions o)
      : options(o),
        reader(reader_options(o)),
        writer(o.hpack),
        server(o.role == Http2Role::kServer),
        conn_recv_window(kDefaultWindow) {
    if (o.max_frame_size < kHttp2DefaultMaxFrameSize ||
        o.max_frame_size > kHttp2MaxFrameSizeUpperBound) {
      throw InvalidArgumentError("Http2FrameCodecOptions::max_frame_size out of range");
    }
  }
  ~Impl() override { cancel_timers(); }

  Http2FrameCodecOptions options;
  Http2FrameReader reader;
  Http2FrameWriter writer;
  ChannelHandlerContext* ctx = nullptr;
  bool server;
  ByteBuf cumulation;
  detail::Http2StreamTable streams;

  // Settings: the peer's, and ours in force (those awaiting the peer's ACK are queued).
  std::uint32_t peer_initial_window = kDefaultWindow;
  std::uint32_t peer_max_concurrent = 0xffffffff;
  std::uint32_t local_initial_window = kDefaultWindow;
  std::vector<std::vector<Http2Setting>> unacked_settings;

  // Connection windows.
  std::int64_t conn_send_window = kDefaultWindow;
  std::int64_t conn_recv_window;
  std::int64_t conn_recv_target = kDefaultWindow;
  std::uint32_t conn_consumed = 0;
  bool conn_writable = true;

  // Stream ids and counts.
  std::uint32_t last_peer_stream = 0;
  std::uint32_t last_local_stream = 0;
  std::uint32_t peer_active = 0;
  std::uint32_t local_active = 0;
  std::array<std::uint32_t, kRecentlyReset> recently_reset{};
  std::size_t recently_reset_next = 0;

  // GOAWAY and shutdown.
  bool go_away_sent = false;
  std::uint32_t go_away_sent_last = kMaxStreamId;
  bool go_away_received = false;
  std::uint32_t go_away_received_last = 0;
  bool graceful = false;
  bool graceful_final = false;
  bool closing = false;
  bool started = false;

  // Floods.
  std::int64_t reset_window_start = 0;
  std::uint32_t resets_in_window = 0;
  std::uint32_t queued_control_frames = 0;
  std::uint32_t empty_frames = 0;

  bool in_read = false;
  bool needs_flush = false;
  bool draining = false;
  std::vector<std::uint32_t> pending_streams;  // streams with queued writes, in order
  std::vector<std::uint32_t> drain_ids;        // pending_streams taken by drain_all()
  std::vector<std::uint32_t> scratch;
  std::vector<Http2Headers> spare_headers;
  ScheduledFuture<void> settings_timer;
  ScheduledFuture<void> shutdown_timer;

  // --- helpers ------------------------------------------------------------------------------
  bool is_local_id(std::uint32_t id) const noexcept { return ((id & 1) != 0) != server; }
  bool is_idle(std::uint32_t id) const noexcept {
    return is_local_id(id) ? id > last_local_stream : id > last_peer_stream;
  }
  bool ignored_after_go_away(std::uint32_t id) const noexcept {
    return go_away_sent && !is_local_id(id) && id > go_away_sent_last;
  }
  bool was_reset_by_us(std::uint32_t id) const noexcept {
    return std::find(recently_reset.begin(), recently_reset.end(), id) != recently_reset.end();
  }
  void note_reset(std::uint32_t id) noexcept {
    recently_reset[recently_reset_next] = id;
    recently_reset_next = (recently_reset_next + 1) % kRecentlyReset;
  }
  std::int64_t threshold(std::int64_t window) const noexcept {
    return std::max<std::int64_t>(1, window * options.window_update_percent / 100);
  }

  void emit(CompositeByteBuf& out, ChannelPromise promise = {}) {
    ctx->write(Message(std::move(out)), std::move(promise));
    needs_flush = true;
  }
  CompositeByteBuf new_out() const { return CompositeByteBuf(ctx->alloc()); }
  // A frame the codec sends by itself: counted against the control-frame flood limit while the
  // peer does not read.
  void control_written() {
    if (options.max_queued_control_frames != 0 && !ctx->channel().is_writable() &&
        ++queued_control_frames > options.max_queued_control_frames) {
      fail_connection(Http2Error::kEnhanceYourCalm,
                      "too many control frames queued for a peer that does not read");
    }
  }
  void flush_if_needed() {
    if (needs_flush && !in_read) {
      needs_flush = false;
      ctx->flush();
    }
  }

  // --- connection start and end -------------------------------------------------------------
  void start();

  void sent_settings(std::vector<Http2Setting> s);

  void cancel_timers() noexcept;

  void send_go_away(std::uint32_t last, Http2Error code, std::string_view debug,
                    ChannelPromise promise = {});

  // A connection error (or the settings timeout): GOAWAY with the code, then close.
  void fail_connection(Http2Error code, std::string_view why);

  void check_drained();

  void graceful_shutdown();

  // --- streams ------------------------------------------------------------------------------
  Http2Stream& open_stream(std::uint32_t id, bool local);

  void fail_pending(Http2Stream& s, const std::exception_ptr& error);

  // Removes stream `s`: its queued writes fail, its unconsumed octets go back to the connection.
  void close_stream(Http2Stream& s, bool reset_by_us);

  // The peer ended its side of `s`; false when the stream closed.
  bool remote_end(Http2Stream& s);
  // This endpoint ended its side of `s`; false when the stream closed.
  bool local_end(Http2Stream& s);

  // Answers a stream error: RST_STREAM, the stream closed, Http2StreamErrorEvent.
  void reset_stream(std::uint32_t id, Http2Error code, std::string message);

  // --- inbound flow control -----------------------------------------------------------------
  void credit_connection(std::uint32_t n);
  void credit_stream(Http2Stream& s, std::uint32_t n);
  void consume(std::uint32_t id, std::uint32_t n);

  // --- outbound flow control ----------------------------------------------------------------
  bool writable(const Http2Stream& s) const noexcept;
  void update_writability(Http2Stream& s);
  void update_connection_writability();

  void write_headers_now(Http2Stream& s, Http2HeadersFrame& f, ChannelPromise promise);
  void recycle(Http2Headers& h);

  // Sends what the windows allow of the writes queued on `s`; false when the stream closed.
  bool drain_stream(Http2Stream& s);

  void list_if_pending(Http2Stream& s);

  // Sends queued writes of every stream, in the order they queued, as the windows allow.
  void drain_all();
  // --- inbound frames -----------------------------------------------------------------------
  void count_empty(bool empty, bool end_stream);

  void on_data(Http2DataFrame& f) override;

  void on_headers(Http2HeadersFrame& f) override;

  void fire_headers(Http2HeadersFrame& f);

  void on_priority(Http2PriorityFrame&) override;

  void on_reset(Http2ResetFrame& f) override;

  void on_settings(Http2SettingsFrame& f) override;

  void apply_local(const std::vector<Http2Setting>& settings);

  void on_push_promise(Http2PushPromiseFrame&) override;

  void on_ping(Http2PingFrame& f) override;

  void on_go_away(Http2GoAwayFrame& f) override;

  void on_window_update(Http2WindowUpdateFrame& f) override;

  void on_unknown(Http2UnknownFrame& f) override;

  // --- inbound bytes ------------------------------------------------------------------------
  void read_bytes(ByteBuf&& buf);
  // --- outbound frames ----------------------------------------------------------------------
  void write_data(Http2DataFrame& f, ChannelPromise& promise);

  void write_headers(Http2HeadersFrame& f, ChannelPromise& promise);

  void write_reset(const Http2ResetFrame& f, ChannelPromise& promise);

  void write_frame(ChannelHandlerContext& c, Message& msg, ChannelPromise& promise);
};

}  // namespace trellis::http2
