#include <trellis/codec/http2/http2_frame_codec.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include <trellis/codec/byte_to_message_decoder.hpp>
#include <trellis/codec/http2/http2_frame_reader.hpp>
#include <trellis/codec/http2/http2_frame_writer.hpp>
#include <trellis/codec/http2/http2_header_validation.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/event_executor.hpp>
#include <trellis/pipeline/scheduled_future.hpp>

#include "http2_stream_table.hpp"

namespace trellis::http2 {

namespace {

using detail::Http2Stream;
using detail::PendingWrite;
using State = Http2StreamState;

constexpr std::int64_t kMaxWindow = kHttp2MaxWindowSize;
constexpr std::uint32_t kDefaultWindow = 65535;
constexpr std::uint32_t kMaxStreamId = 0x7fffffff;
// The opaque data of the PING that measures the round trip of a graceful shutdown.
constexpr std::uint64_t kGracefulShutdownPing = 0x7472656c6c697332;  // "trellis2"
constexpr std::size_t kRecentlyReset = 32;
constexpr std::size_t kSpareHeaders = 8;
constexpr std::size_t kMaxDebugData = 256;

[[noreturn]] void connection_error(Http2Error code, const std::string& text) {
  throw Http2ConnectionError(code, text);
}
[[noreturn]] void stream_error(std::uint32_t id, Http2Error code, const std::string& text) {
  throw Http2StreamError(id, code, text);
}
std::string sid(std::uint32_t id) { return "stream " + std::to_string(id); }

Http2FrameReaderOptions reader_options(const Http2FrameCodecOptions& o) {
  Http2FrameReaderOptions r;
  r.role = o.role;
  r.check_connection_start = true;
  r.max_frame_size = o.max_frame_size;
  r.max_header_table_size = HpackDecoder::kDefaultMaxTableSize;  // until the peer's ACK
  r.max_header_list_size = o.max_header_list_size;
  r.max_header_block_size = o.max_header_block_size;
  return r;
}

}  // namespace

struct Http2FrameCodec::Impl final : Http2FrameListener {
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
  void start() {
    if (started || ctx == nullptr) return;
    started = true;
    std::vector<Http2Setting> s;
    if (!server) s.push_back({static_cast<std::uint16_t>(Http2SettingId::kEnablePush), 0});
    s.push_back({static_cast<std::uint16_t>(Http2SettingId::kMaxConcurrentStreams),
                 options.max_concurrent_streams});
    if (options.initial_window_size != kDefaultWindow) {
      s.push_back({static_cast<std::uint16_t>(Http2SettingId::kInitialWindowSize),
                   options.initial_window_size});
    }
    if (options.max_frame_size != kHttp2DefaultMaxFrameSize) {
      s.push_back(
          {static_cast<std::uint16_t>(Http2SettingId::kMaxFrameSize), options.max_frame_size});
    }
    if (options.header_table_size != HpackDecoder::kDefaultMaxTableSize) {
      s.push_back({static_cast<std::uint16_t>(Http2SettingId::kHeaderTableSize),
                   options.header_table_size});
    }
    s.push_back({static_cast<std::uint16_t>(Http2SettingId::kMaxHeaderListSize),
                 options.max_header_list_size});
    CompositeByteBuf out = new_out();
    if (!server) writer.write_preface(out);
    writer.write_settings(out, s);
    if (options.connection_window_size > kDefaultWindow) {
      const std::uint32_t more = options.connection_window_size - kDefaultWindow;
      writer.write_window_update(out, 0, more);
      conn_recv_window += more;
      conn_recv_target += more;
    }
    emit(out);
    sent_settings(std::move(s));
    flush_if_needed();
  }

  void sent_settings(std::vector<Http2Setting> s) {
    unacked_settings.push_back(std::move(s));
    if (options.settings_ack_timeout.count() > 0 && !settings_timer.valid()) {
      settings_timer = ctx->executor().schedule(options.settings_ack_timeout, [this] {
        settings_timer = ScheduledFuture<void>();
        if (!unacked_settings.empty()) {
          fail_connection(Http2Error::kSettingsTimeout, "SETTINGS not acknowledged in time");
        }
      });
    }
  }

  void cancel_timers() noexcept {
    if (settings_timer.valid()) settings_timer.cancel();
    settings_timer = ScheduledFuture<void>();
    if (shutdown_timer.valid()) shutdown_timer.cancel();
    shutdown_timer = ScheduledFuture<void>();
  }

  void send_go_away(std::uint32_t last, Http2Error code, std::string_view debug,
                    ChannelPromise promise = {}) {
    CompositeByteBuf out = new_out();
    debug = debug.substr(0, kMaxDebugData);
    writer.write_go_away(out, last, code,
                         std::as_bytes(std::span<const char>(debug.data(), debug.size())));
    emit(out, std::move(promise));
    go_away_sent = true;
    go_away_sent_last = std::min(go_away_sent_last, last);
  }

  // A connection error (or the settings timeout): GOAWAY with the code, then close.
  void fail_connection(Http2Error code, std::string_view why) {
    if (closing || ctx == nullptr) return;
    closing = true;
    cancel_timers();
    send_go_away(last_peer_stream, code, why);
    needs_flush = false;
    ctx->flush();
    ctx->close();
  }

  void check_drained() {
    if (graceful_final && streams.size() == 0 && !closing) {
      closing = true;
      cancel_timers();
      needs_flush = false;
      ctx->flush();
      ctx->close();
    }
  }

  void graceful_shutdown() {
    if (closing || graceful || ctx == nullptr) return;
    graceful = true;
    if (server) {
      send_go_away(kMaxStreamId, Http2Error::kNoError, {});
      CompositeByteBuf out = new_out();
      writer.write_ping(out, false, kGracefulShutdownPing);
      emit(out);
    } else {
      send_go_away(0, Http2Error::kNoError, {});
      graceful_final = true;
    }
    if (options.graceful_shutdown_timeout.count() > 0) {
      shutdown_timer = ctx->executor().schedule(options.graceful_shutdown_timeout, [this] {
        shutdown_timer = ScheduledFuture<void>();
        if (closing) return;
        if (!graceful_final) send_go_away(last_peer_stream, Http2Error::kNoError, {});
        graceful_final = true;
        closing = true;
        cancel_timers();
        ctx->flush();
        ctx->close();
      });
    }
    check_drained();
    flush_if_needed();
  }

  // --- streams ------------------------------------------------------------------------------
  Http2Stream& open_stream(std::uint32_t id, bool local) {
    Http2Stream& s = streams.insert(id);
    s.state = State::kOpen;
    s.local = local;
    s.send_window = peer_initial_window;
    s.recv_window = local_initial_window;
    s.writable = conn_send_window > 0 && s.send_window > 0;
    if (local) {
      last_local_stream = id;
      ++local_active;
    } else {
      last_peer_stream = id;
      ++peer_active;
    }
    return s;
  }

  void fail_pending(Http2Stream& s, const std::exception_ptr& error) {
    for (std::size_t i = s.pending_head; i < s.pending.size(); ++i) {
      s.pending[i].promise.try_set_exception(error);
    }
    s.pending.clear();
    s.pending_head = 0;
    s.pending_bytes = 0;
  }

  // Removes stream `s`: its queued writes fail, its unconsumed octets go back to the connection.
  void close_stream(Http2Stream& s, bool reset_by_us) {
    const std::uint32_t id = s.id;
    if (s.has_pending()) {
      fail_pending(s, std::make_exception_ptr(
                          Http2Exception(Http2Error::kStreamClosed, sid(id) + " closed")));
    }
    const std::uint32_t unconsumed = s.unconsumed;
    (s.local ? local_active : peer_active) -= 1;
    if (reset_by_us) note_reset(id);
    streams.erase(id);
    if (unconsumed != 0 && !closing) credit_connection(unconsumed);
    ctx->fire_user_event_triggered(Message(Http2StreamClosedEvent{id}));
    check_drained();
  }

  // The peer ended its side of `s`; false when the stream closed.
  bool remote_end(Http2Stream& s) {
    if (s.state == State::kOpen) {
      s.state = State::kHalfClosedRemote;
      return true;
    }
    close_stream(s, false);
    return false;
  }
  // This endpoint ended its side of `s`; false when the stream closed.
  bool local_end(Http2Stream& s) {
    if (s.state == State::kOpen) {
      s.state = State::kHalfClosedLocal;
      update_writability(s);
      return true;
    }
    close_stream(s, false);
    return false;
  }

  // Answers a stream error: RST_STREAM, the stream closed, Http2StreamErrorEvent.
  void reset_stream(std::uint32_t id, Http2Error code, std::string message) {
    CompositeByteBuf out = new_out();
    writer.write_rst_stream(out, id, code);
    emit(out);
    if (Http2Stream* s = streams.find(id)) {
      close_stream(*s, true);
    } else {
      // A stream the reader refused as it arrived (a header list too large, say) counts as
      // opened and reset: the peer's frames still in flight on it are ignored.
      if (!is_local_id(id) && id > last_peer_stream) last_peer_stream = id;
      note_reset(id);
    }
    ctx->fire_user_event_triggered(Message(Http2StreamErrorEvent{id, code, std::move(message)}));
    control_written();
  }

  // --- inbound flow control -----------------------------------------------------------------
  void credit_connection(std::uint32_t n) {
    conn_consumed += n;
    if (conn_consumed >= threshold(conn_recv_target)) {
      CompositeByteBuf out = new_out();
      writer.write_window_update(out, 0, conn_consumed);
      emit(out);
      conn_recv_window += conn_consumed;
      conn_consumed = 0;
      control_written();
    }
  }
  void credit_stream(Http2Stream& s, std::uint32_t n) {
    if (s.state == State::kHalfClosedRemote) return;  // the peer sends nothing more
    s.consumed += n;
    if (s.consumed >= threshold(local_initial_window)) {
      CompositeByteBuf out = new_out();
      writer.write_window_update(out, s.id, s.consumed);
      emit(out);
      s.recv_window += s.consumed;
      s.consumed = 0;
      control_written();
    }
  }
  void consume(std::uint32_t id, std::uint32_t n) {
    Http2Stream* s = streams.find(id);
    if (s == nullptr || n == 0) return;
    n = std::min(n, s->unconsumed);
    s->unconsumed -= n;
    credit_stream(*s, n);
    credit_connection(n);
  }

  // --- outbound flow control ----------------------------------------------------------------
  bool writable(const Http2Stream& s) const noexcept {
    return (s.state == State::kOpen || s.state == State::kHalfClosedRemote) && !s.end_queued &&
           !s.has_pending() && s.send_window > 0 && conn_send_window > 0;
  }
  void update_writability(Http2Stream& s) {
    const bool w = writable(s);
    if (w == s.writable) return;
    s.writable = w;
    ctx->fire_user_event_triggered(Message(Http2StreamWritabilityChangedEvent{s.id}));
  }
  void update_connection_writability() {
    const bool w = conn_send_window > 0;
    if (w == conn_writable) return;
    conn_writable = w;
    scratch.clear();
    streams.ids(scratch);
    for (std::uint32_t id : scratch) {
      if (Http2Stream* s = streams.find(id)) s->writable = writable(*s);
    }
    ctx->fire_user_event_triggered(Message(Http2StreamWritabilityChangedEvent{0}));
  }

  void write_headers_now(Http2Stream& s, Http2HeadersFrame& f, ChannelPromise promise) {
    CompositeByteBuf out = new_out();
    writer.write_headers(out, s.id, f.headers, f.end_stream, f.priority, f.padding);
    emit(out, std::move(promise));
    recycle(f.headers);
  }
  void recycle(Http2Headers& h) {
    if (spare_headers.size() < kSpareHeaders) {
      h.clear();
      spare_headers.push_back(std::move(h));
    }
  }

  // Sends what the windows allow of the writes queued on `s`; false when the stream closed.
  bool drain_stream(Http2Stream& s) {
    while (s.has_pending()) {
      PendingWrite& w = s.pending[s.pending_head];
      if (auto* h = w.msg.try_get<Http2HeadersFrame>()) {
        const bool end = h->end_stream;
        ChannelPromise p = std::move(w.promise);
        Http2HeadersFrame frame = w.msg.take<Http2HeadersFrame>();
        ++s.pending_head;
        write_headers_now(s, frame, std::move(p));
        if (end && !local_end(s)) return false;
        continue;
      }
      auto& d = w.msg.get<Http2DataFrame>();
      const std::int64_t length = d.flow_controlled_length();
      const std::int64_t allowed =
          std::min({s.send_window, conn_send_window, std::int64_t{writer.max_frame_size()}});
      if (length != 0 && allowed <= 0) break;
      CompositeByteBuf out = new_out();
      if (length <= allowed || length == 0) {
        const bool end = d.end_stream;
        writer.write_data(out, s.id, std::move(d.data), end, d.padding);
        s.send_window -= length;
        conn_send_window -= length;
        s.pending_bytes -= static_cast<std::uint64_t>(length);
        ChannelPromise p = std::move(w.promise);
        ++s.pending_head;
        emit(out, std::move(p));
        if (end && !local_end(s)) return false;
        continue;
      }
      if (d.data.readable_bytes() == 0) break;  // only padding left, more than allowed
      const auto n = static_cast<std::size_t>(
          std::min<std::int64_t>(allowed, static_cast<std::int64_t>(d.data.readable_bytes())));
      writer.write_data(out, s.id, d.data.read_slice(n), false, 0);
      s.send_window -= static_cast<std::int64_t>(n);
      conn_send_window -= static_cast<std::int64_t>(n);
      s.pending_bytes -= n;
      emit(out);
    }
    if (!s.has_pending()) {
      s.pending.clear();
      s.pending_head = 0;
    }
    return true;
  }

  void list_if_pending(Http2Stream& s) {
    if (s.has_pending() && !s.listed) {
      s.listed = true;
      pending_streams.push_back(s.id);
    }
  }

  // Sends queued writes of every stream, in the order they queued, as the windows allow.
  void drain_all() {
    if (draining) return;
    draining = true;
    drain_ids.clear();
    drain_ids.swap(pending_streams);  // both keep their capacity
    for (std::uint32_t id : drain_ids) {
      Http2Stream* s = streams.find(id);
      if (s == nullptr) continue;
      s->listed = false;
      if (conn_send_window > 0 && !drain_stream(*s)) continue;
      s = streams.find(id);
      if (s == nullptr) continue;
      list_if_pending(*s);
      update_writability(*s);
    }
    drain_ids.clear();
    draining = false;
    update_connection_writability();
  }

  // --- inbound frames -----------------------------------------------------------------------
  void count_empty(bool empty, bool end_stream) {
    if (!empty || end_stream) {
      empty_frames = 0;
      return;
    }
    if (options.max_consecutive_empty_frames != 0 &&
        ++empty_frames > options.max_consecutive_empty_frames) {
      connection_error(Http2Error::kEnhanceYourCalm,
                       "too many consecutive empty DATA or HEADERS frames");
    }
  }

  void on_data(Http2DataFrame& f) override {
    if (closing) return;
    const std::uint32_t id = f.stream_id;
    const std::uint32_t length = f.flow_controlled_length();
    if (length > conn_recv_window) {
      connection_error(Http2Error::kFlowControlError,
                       "DATA beyond the connection's flow-control window");
    }
    conn_recv_window -= length;
    count_empty(f.data.readable_bytes() == 0, f.end_stream);
    Http2Stream* s = streams.find(id);
    if (s == nullptr || (s->state != State::kOpen && s->state != State::kHalfClosedLocal)) {
      credit_connection(length);
      if (s == nullptr && (ignored_after_go_away(id) || was_reset_by_us(id))) return;
      if (s == nullptr && is_idle(id)) {
        connection_error(Http2Error::kProtocolError, "DATA on idle " + sid(id));
      }
      stream_error(id, Http2Error::kStreamClosed, "DATA on closed " + sid(id));
    }
    if (length > s->recv_window) {
      credit_connection(length);
      stream_error(id, Http2Error::kFlowControlError,
                   "DATA beyond the flow-control window of " + sid(id));
    }
    s->recv_window -= length;
    const auto data_length = static_cast<std::uint32_t>(f.data.readable_bytes());
    s->received_length += data_length;
    if (s->expected_length >= 0 && (s->received_length > s->expected_length ||
                                    (f.end_stream && s->received_length != s->expected_length))) {
      credit_connection(length);
      stream_error(id, Http2Error::kProtocolError,
                   "DATA does not match the content-length of " + sid(id));
    }
    // Padding is consumed at once; the data when the application says so (or at once).
    s->unconsumed += data_length;
    if (f.padding != 0) {
      credit_stream(*s, f.padding);
      credit_connection(f.padding);
    }
    const bool end = f.end_stream;
    if (options.auto_consume) {
      if (end) {  // the stream's window no longer matters: only the connection's goes back
        s->unconsumed -= data_length;
        credit_connection(data_length);
      } else {
        consume(id, data_length);
      }
    }
    ctx->fire_channel_read(Message(Http2DataFrame{id, std::move(f.data), end, f.padding}));
    if (end) {
      if (Http2Stream* again = streams.find(id)) remote_end(*again);
    }
  }

  void on_headers(Http2HeadersFrame& f) override {
    if (closing) return;
    const std::uint32_t id = f.stream_id;
    count_empty(f.headers.empty(), f.end_stream);
    Http2Stream* s = streams.find(id);
    if (s == nullptr) {
      if (is_local_id(id)) {
        if (id > last_local_stream) {
          connection_error(Http2Error::kProtocolError,
                           "HEADERS on " + sid(id) + ", which only this endpoint may open");
        }
        if (was_reset_by_us(id)) return;
        connection_error(Http2Error::kStreamClosed, "HEADERS on closed " + sid(id));
      }
      if (id <= last_peer_stream) {
        if (was_reset_by_us(id)) return;
        connection_error(Http2Error::kProtocolError, "HEADERS on " + sid(id) +
                                                         ", not above the last stream opened (" +
                                                         std::to_string(last_peer_stream) + ")");
      }
      if (ignored_after_go_away(id)) return;
      if (!server) {
        connection_error(Http2Error::kProtocolError, "a server opened " + sid(id));
      }
      if (peer_active >= options.max_concurrent_streams) {
        last_peer_stream = id;
        stream_error(
            id, Http2Error::kRefusedStream,
            "more than " + std::to_string(options.max_concurrent_streams) + " concurrent streams");
      }
      std::int64_t expected = -1;
      if (options.validate_headers) {
        if (auto why = validate_request_headers(f.headers)) {
          last_peer_stream = id;
          stream_error(id, Http2Error::kProtocolError,
                       "malformed request on " + sid(id) + ": " + std::string(*why));
        }
        expected = content_length_of(f.headers).value_or(-1);
        if (f.end_stream && expected > 0) {
          last_peer_stream = id;
          stream_error(id, Http2Error::kProtocolError, "content-length without DATA on " + sid(id));
        }
      }
      Http2Stream& created = open_stream(id, false);
      created.expected_length = expected;
      if (f.end_stream) created.state = State::kHalfClosedRemote;
      fire_headers(f);
      return;
    }
    if (s->state != State::kOpen && s->state != State::kHalfClosedLocal) {
      stream_error(id, Http2Error::kStreamClosed, "HEADERS on half-closed (remote) " + sid(id));
    }
    if (server) {
      if (!f.end_stream) {
        stream_error(id, Http2Error::kProtocolError, "trailers without END_STREAM on " + sid(id));
      }
      if (options.validate_headers) {
        if (auto why = validate_trailers(f.headers)) {
          stream_error(id, Http2Error::kProtocolError,
                       "malformed trailers on " + sid(id) + ": " + std::string(*why));
        }
        if (s->expected_length >= 0 && s->received_length != s->expected_length) {
          stream_error(id, Http2Error::kProtocolError,
                       "DATA does not match the content-length of " + sid(id));
        }
      }
    }
    const bool end = f.end_stream;
    fire_headers(f);
    if (end) {
      if (Http2Stream* again = streams.find(id)) remote_end(*again);
    }
  }

  void fire_headers(Http2HeadersFrame& f) {
    Http2HeadersFrame out{f.stream_id, std::move(f.headers), f.end_stream, f.priority, f.padding};
    if (!spare_headers.empty()) {
      f.headers = std::move(spare_headers.back());
      spare_headers.pop_back();
    }
    ctx->fire_channel_read(Message(std::move(out)));
  }

  void on_priority(Http2PriorityFrame&) override {}

  void on_reset(Http2ResetFrame& f) override {
    if (closing) return;
    Http2Stream* s = streams.find(f.stream_id);
    if (s == nullptr) {
      if (is_idle(f.stream_id) && !ignored_after_go_away(f.stream_id)) {
        connection_error(Http2Error::kProtocolError, "RST_STREAM on idle " + sid(f.stream_id));
      }
      return;
    }
    if (options.max_resets_per_window != 0) {
      const std::int64_t now = ctx->executor().current_time_nanos();
      if (resets_in_window == 0 || now - reset_window_start >= options.rapid_reset_window.count()) {
        reset_window_start = now;
        resets_in_window = 0;
      }
      if (++resets_in_window > options.max_resets_per_window) {
        connection_error(Http2Error::kEnhanceYourCalm, "too many streams reset by the peer");
      }
    }
    ctx->fire_channel_read(Message(Http2ResetFrame{f.stream_id, f.error_code}));
    if (Http2Stream* again = streams.find(f.stream_id)) close_stream(*again, false);
  }

  void on_settings(Http2SettingsFrame& f) override {
    if (closing) return;
    if (f.ack) {
      if (unacked_settings.empty()) {
        connection_error(Http2Error::kProtocolError, "SETTINGS ACK without SETTINGS sent");
      }
      apply_local(unacked_settings.front());
      unacked_settings.erase(unacked_settings.begin());
      if (unacked_settings.empty() && settings_timer.valid()) {
        settings_timer.cancel();
        settings_timer = ScheduledFuture<void>();
      }
      ctx->fire_channel_read(Message(Http2SettingsFrame{true, {}}));
      return;
    }
    bool window_grew = false;
    for (const Http2Setting& x : f.settings) {
      switch (static_cast<Http2SettingId>(x.id)) {
        case Http2SettingId::kHeaderTableSize:
          writer.hpack_encoder().set_peer_max_table_size(x.value);
          break;
        case Http2SettingId::kMaxConcurrentStreams:
          peer_max_concurrent = x.value;
          break;
        case Http2SettingId::kInitialWindowSize: {
          const std::int64_t delta = std::int64_t{x.value} - peer_initial_window;
          scratch.clear();
          streams.ids(scratch);
          for (std::uint32_t id : scratch) {
            Http2Stream* s = streams.find(id);
            if (s->send_window + delta > kMaxWindow) {
              connection_error(
                  Http2Error::kFlowControlError,
                  "SETTINGS_INITIAL_WINDOW_SIZE takes the window of " + sid(id) + " above 2^31-1");
            }
            s->send_window += delta;
          }
          peer_initial_window = x.value;
          window_grew |= delta > 0;
          break;
        }
        case Http2SettingId::kMaxFrameSize:
          writer.set_max_frame_size(x.value);
          break;
        default:
          break;
      }
    }
    CompositeByteBuf out = new_out();
    writer.write_settings_ack(out);
    emit(out);
    control_written();
    ctx->fire_channel_read(Message(Http2SettingsFrame{false, f.settings}));
    if (window_grew) drain_all();
    scratch.clear();
    streams.ids(scratch);
    for (std::uint32_t id : scratch) {
      if (Http2Stream* s = streams.find(id)) update_writability(*s);
    }
  }

  void apply_local(const std::vector<Http2Setting>& settings) {
    for (const Http2Setting& x : settings) {
      switch (static_cast<Http2SettingId>(x.id)) {
        case Http2SettingId::kHeaderTableSize:
          reader.hpack_decoder().set_max_table_size(x.value);
          break;
        case Http2SettingId::kInitialWindowSize: {
          const std::int64_t delta = std::int64_t{x.value} - local_initial_window;
          scratch.clear();
          streams.ids(scratch);
          for (std::uint32_t id : scratch) streams.find(id)->recv_window += delta;
          local_initial_window = x.value;
          break;
        }
        case Http2SettingId::kMaxFrameSize:
          reader.set_max_frame_size(x.value);
          break;
        case Http2SettingId::kMaxHeaderListSize:
          reader.set_max_header_list_size(x.value);
          break;
        case Http2SettingId::kMaxConcurrentStreams:
          options.max_concurrent_streams = x.value;
          break;
        default:
          break;
      }
    }
  }

  void on_push_promise(Http2PushPromiseFrame&) override {
    // Clients send SETTINGS_ENABLE_PUSH 0 (RFC 9113 §8.4); the reader refuses it at a server.
    connection_error(Http2Error::kProtocolError, "PUSH_PROMISE with push disabled");
  }

  void on_ping(Http2PingFrame& f) override {
    if (closing) return;
    if (!f.ack) {
      CompositeByteBuf out = new_out();
      writer.write_ping(out, true, f.opaque_data);
      emit(out);
      control_written();
    } else if (graceful && !graceful_final && f.opaque_data == kGracefulShutdownPing) {
      send_go_away(last_peer_stream, Http2Error::kNoError, {});
      graceful_final = true;
      check_drained();
      return;
    }
    ctx->fire_channel_read(Message(Http2PingFrame{f.opaque_data, f.ack}));
  }

  void on_go_away(Http2GoAwayFrame& f) override {
    if (closing) return;
    go_away_received = true;
    go_away_received_last = f.last_stream_id;
    const std::uint32_t last = f.last_stream_id;
    ctx->fire_channel_read(Message(Http2GoAwayFrame{last, f.error_code, std::move(f.debug_data)}));
    // Streams this endpoint opened above the last id were not processed: they are gone.
    scratch.clear();
    streams.ids(scratch);
    std::vector<std::uint32_t> ids = std::move(scratch);
    scratch.clear();
    for (std::uint32_t id : ids) {
      if (!is_local_id(id) || id <= last) continue;
      if (Http2Stream* s = streams.find(id)) close_stream(*s, false);
    }
    ids.clear();
    scratch = std::move(ids);
  }

  void on_window_update(Http2WindowUpdateFrame& f) override {
    if (closing) return;
    const std::uint32_t id = f.stream_id;
    if (id == 0) {
      if (conn_send_window + f.increment > kMaxWindow) {
        connection_error(Http2Error::kFlowControlError,
                         "WINDOW_UPDATE takes the connection's window above 2^31-1");
      }
      conn_send_window += f.increment;
      drain_all();
      return;
    }
    Http2Stream* s = streams.find(id);
    if (s == nullptr) {
      if (is_idle(id) && !ignored_after_go_away(id)) {
        connection_error(Http2Error::kProtocolError, "WINDOW_UPDATE on idle " + sid(id));
      }
      return;
    }
    if (s->send_window + f.increment > kMaxWindow) {
      stream_error(id, Http2Error::kFlowControlError,
                   "WINDOW_UPDATE takes the window of " + sid(id) + " above 2^31-1");
    }
    s->send_window += f.increment;
    if (s->has_pending() && conn_send_window > 0) {
      if (!drain_stream(*s)) return;
      s = streams.find(id);  // the application may have reset it meanwhile
      if (s == nullptr) return;
    }
    update_writability(*s);
    update_connection_writability();
  }

  void on_unknown(Http2UnknownFrame& f) override {
    if (closing) return;
    ctx->fire_channel_read(
        Message(Http2UnknownFrame{f.type, f.flags, f.stream_id, std::move(f.payload)}));
  }

  // --- inbound bytes ------------------------------------------------------------------------
  void read_bytes(ByteBuf&& buf) {
    if (closing) return;
    cumulation = codec::merge_cumulator(ctx->alloc(), std::move(cumulation), std::move(buf));
    in_read = true;
    for (;;) {
      try {
        reader.read(cumulation, *this);
        break;
      } catch (const Http2StreamError& e) {
        reset_stream(e.stream(), e.code(), e.what());
      } catch (const Http2ConnectionError& e) {
        in_read = false;
        fail_connection(e.code(), e.what());
        break;
      } catch (const Http2Exception& e) {
        in_read = false;
        fail_connection(e.code(), e.what());
        break;
      } catch (const std::exception& e) {
        in_read = false;
        fail_connection(Http2Error::kInternalError, e.what());
        break;
      }
      if (closing) break;
    }
    in_read = false;
    if (closing || !cumulation.is_readable()) cumulation = ByteBuf();
  }

  // --- outbound frames ----------------------------------------------------------------------
  void write_data(Http2DataFrame& f, ChannelPromise& promise) {
    Http2Stream* s = streams.find(f.stream_id);
    if (s == nullptr || s->end_queued ||
        (s->state != State::kOpen && s->state != State::kHalfClosedRemote)) {
      throw Http2Exception(Http2Error::kStreamClosed,
                           "DATA on " + sid(f.stream_id) + ", which cannot send");
    }
    if (f.padding > 256) throw InvalidArgumentError("HTTP/2 padding above 256 octets");
    s->end_queued = f.end_stream;
    s->pending_bytes += f.flow_controlled_length();
    s->pending.push_back({Message(std::move(f)), std::move(promise)});
    const std::uint32_t id = s->id;
    if (!s->listed && !drain_stream(*s)) return;
    s = streams.find(id);
    if (s == nullptr) return;
    list_if_pending(*s);
    update_writability(*s);
    update_connection_writability();
  }

  void write_headers(Http2HeadersFrame& f, ChannelPromise& promise) {
    const std::uint32_t id = f.stream_id;
    Http2Stream* s = streams.find(id);
    if (s == nullptr) {
      if (id == 0 || id > kMaxStreamId || !is_local_id(id) || id <= last_local_stream) {
        throw Http2Exception(Http2Error::kProtocolError,
                             "HEADERS on " + sid(id) + ", which this endpoint cannot open");
      }
      if (server) {
        throw Http2Exception(Http2Error::kProtocolError, "a server cannot open streams");
      }
      if (go_away_received || go_away_sent) {
        throw Http2Exception(Http2Error::kRefusedStream,
                             "no new stream after GOAWAY (" + sid(id) + ")");
      }
      if (local_active >= peer_max_concurrent) {
        throw Http2Exception(
            Http2Error::kRefusedStream,
            "the peer allows " + std::to_string(peer_max_concurrent) + " concurrent streams");
      }
      s = &open_stream(id, true);
    } else if (s->end_queued ||
               (s->state != State::kOpen && s->state != State::kHalfClosedRemote)) {
      throw Http2Exception(Http2Error::kStreamClosed,
                           "HEADERS on " + sid(id) + ", which cannot send");
    }
    if (s->has_pending()) {  // trailers wait behind the data
      s->end_queued = f.end_stream;
      s->pending.push_back({Message(std::move(f)), std::move(promise)});
      update_writability(*s);
      return;
    }
    const bool end = f.end_stream;
    write_headers_now(*s, f, std::move(promise));
    if (end) local_end(*s);
  }

  void write_reset(const Http2ResetFrame& f, ChannelPromise& promise) {
    if (f.stream_id == 0 || f.stream_id > kMaxStreamId) {
      throw Http2Exception(Http2Error::kProtocolError, "RST_STREAM on " + sid(f.stream_id));
    }
    Http2Stream* s = streams.find(f.stream_id);
    if (s == nullptr && is_idle(f.stream_id)) {
      throw Http2Exception(Http2Error::kProtocolError, "RST_STREAM on idle " + sid(f.stream_id));
    }
    CompositeByteBuf out = new_out();
    writer.write_rst_stream(out, f.stream_id, f.error_code);
    emit(out, std::move(promise));
    if (s != nullptr) close_stream(*s, true);
  }

  void write_frame(ChannelHandlerContext& c, Message& msg, ChannelPromise& promise) {
    if (closing) throw ClosedChannelError("the HTTP/2 connection is closing");
    if (auto* d = msg.try_get<Http2DataFrame>()) return write_data(*d, promise);
    if (auto* h = msg.try_get<Http2HeadersFrame>()) return write_headers(*h, promise);
    if (auto* r = msg.try_get<Http2ResetFrame>()) return write_reset(*r, promise);
    if (auto* w = msg.try_get<Http2WindowUpdateFrame>()) {
      if (w->increment == 0 || w->increment > kMaxWindow) {
        throw InvalidArgumentError("WINDOW_UPDATE increment out of 1..2^31-1");
      }
      if (w->stream_id != 0) {
        consume(w->stream_id, w->increment);
      } else {
        if (conn_recv_window + w->increment > kMaxWindow) {
          throw InvalidArgumentError("the connection's window would pass 2^31-1");
        }
        CompositeByteBuf out = new_out();
        writer.write_window_update(out, 0, w->increment);
        conn_recv_window += w->increment;
        conn_recv_target += w->increment;
        emit(out);
      }
      promise.try_set_value();
      return;
    }
    CompositeByteBuf out = new_out();
    if (auto* s = msg.try_get<Http2SettingsFrame>()) {
      if (s->ack) throw InvalidArgumentError("the codec acknowledges SETTINGS by itself");
      for (const Http2Setting& x : s->settings) {
        if (x.id == static_cast<std::uint16_t>(Http2SettingId::kEnablePush) && x.value != 0) {
          throw InvalidArgumentError("server push is not supported");
        }
      }
      writer.write_settings(out, s->settings);
      emit(out, std::move(promise));
      sent_settings(std::move(s->settings));
    } else if (auto* p = msg.try_get<Http2PingFrame>()) {
      writer.write_ping(out, p->ack, p->opaque_data);
      emit(out, std::move(promise));
    } else if (auto* g = msg.try_get<Http2GoAwayFrame>()) {
      const auto debug = g->debug_data.readable_span();
      const std::string_view text(reinterpret_cast<const char*>(debug.data()), debug.size());
      send_go_away(last_peer_stream, g->error_code, text, std::move(promise));
    } else if (auto* pr = msg.try_get<Http2PriorityFrame>()) {
      writer.write_priority(out, pr->stream_id, pr->priority);
      emit(out, std::move(promise));
    } else if (auto* u = msg.try_get<Http2UnknownFrame>()) {
      writer.write_frame(out, u->type, u->flags, u->stream_id, u->payload.readable_span());
      emit(out, std::move(promise));
    } else if (msg.is<Http2PushPromiseFrame>()) {
      throw InvalidArgumentError("server push is not supported");
    } else {
      c.write(std::move(msg), std::move(promise));
    }
  }
};

Http2FrameCodec::Http2FrameCodec(Http2FrameCodecOptions options)
    : impl_(std::make_unique<Impl>(options)) {}

Http2FrameCodec::~Http2FrameCodec() = default;

const Http2FrameCodecOptions& Http2FrameCodec::options() const noexcept { return impl_->options; }

Http2StreamState Http2FrameCodec::stream_state(std::uint32_t id) const noexcept {
  if (const auto* s = impl_->streams.find(id)) return s->state;
  return impl_->is_idle(id) ? Http2StreamState::kIdle : Http2StreamState::kClosed;
}
std::size_t Http2FrameCodec::active_streams() const noexcept { return impl_->streams.size(); }
std::uint32_t Http2FrameCodec::next_stream_id() const noexcept {
  const Impl& i = *impl_;
  std::uint32_t next = i.last_local_stream == 0 ? (i.server ? 2u : 1u) : i.last_local_stream + 2;
  return next > kMaxStreamId ? 0 : next;
}
std::uint32_t Http2FrameCodec::last_peer_stream_id() const noexcept {
  return impl_->last_peer_stream;
}
std::int64_t Http2FrameCodec::connection_send_window() const noexcept {
  return impl_->conn_send_window;
}
std::int64_t Http2FrameCodec::stream_send_window(std::uint32_t id) const noexcept {
  const auto* s = impl_->streams.find(id);
  return s != nullptr ? s->send_window : 0;
}
std::int64_t Http2FrameCodec::connection_receive_window() const noexcept {
  return impl_->conn_recv_window;
}
std::int64_t Http2FrameCodec::stream_receive_window(std::uint32_t id) const noexcept {
  const auto* s = impl_->streams.find(id);
  return s != nullptr ? s->recv_window : 0;
}
std::uint64_t Http2FrameCodec::stream_queued_bytes(std::uint32_t id) const noexcept {
  const auto* s = impl_->streams.find(id);
  return s != nullptr ? s->pending_bytes : 0;
}
bool Http2FrameCodec::is_stream_writable(std::uint32_t id) const noexcept {
  const auto* s = impl_->streams.find(id);
  return s != nullptr && impl_->writable(*s);
}
std::uint32_t Http2FrameCodec::peer_max_concurrent_streams() const noexcept {
  return impl_->peer_max_concurrent;
}
std::uint32_t Http2FrameCodec::peer_initial_window_size() const noexcept {
  return impl_->peer_initial_window;
}
bool Http2FrameCodec::go_away_sent() const noexcept { return impl_->go_away_sent; }
bool Http2FrameCodec::go_away_received() const noexcept { return impl_->go_away_received; }

void Http2FrameCodec::consume_bytes(std::uint32_t id, std::uint32_t n) {
  if (impl_->ctx == nullptr || impl_->closing) return;
  impl_->consume(id, n);
  impl_->flush_if_needed();
}

void Http2FrameCodec::start_graceful_shutdown() { impl_->graceful_shutdown(); }

void Http2FrameCodec::handler_added(ChannelHandlerContext& ctx) {
  impl_->ctx = &ctx;
  if (ctx.channel().is_active()) impl_->start();
}

void Http2FrameCodec::handler_removed(ChannelHandlerContext&) { impl_->cancel_timers(); }

void Http2FrameCodec::channel_active(ChannelHandlerContext& ctx) {
  impl_->start();
  ctx.fire_channel_active();
}

void Http2FrameCodec::channel_inactive(ChannelHandlerContext& ctx) {
  Impl& i = *impl_;
  i.closing = true;
  i.cancel_timers();
  i.scratch.clear();
  i.streams.ids(i.scratch);
  std::vector<std::uint32_t> ids = std::move(i.scratch);
  i.scratch.clear();
  for (std::uint32_t id : ids) {
    if (auto* s = i.streams.find(id)) {
      i.fail_pending(*s, std::make_exception_ptr(ClosedChannelError("the channel closed")));
      i.close_stream(*s, false);
    }
  }
  i.cumulation = ByteBuf();
  ctx.fire_channel_inactive();
}

void Http2FrameCodec::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (auto* buf = msg.try_get<ByteBuf>()) {
    impl_->read_bytes(std::move(*buf));
    return;
  }
  ctx.fire_channel_read(std::move(msg));
}

void Http2FrameCodec::channel_read_complete(ChannelHandlerContext& ctx) {
  if (impl_->needs_flush) {
    impl_->needs_flush = false;
    ctx.flush();
  }
  ctx.fire_channel_read_complete();
}

void Http2FrameCodec::channel_writability_changed(ChannelHandlerContext& ctx) {
  if (ctx.channel().is_writable()) impl_->queued_control_frames = 0;
  ctx.fire_channel_writability_changed();
}

void Http2FrameCodec::write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  impl_->write_frame(ctx, msg, promise);
}

void Http2FrameCodec::close(ChannelHandlerContext& ctx, ChannelPromise promise) {
  Impl& i = *impl_;
  if (!i.closing && i.started && !i.go_away_sent) {
    i.send_go_away(i.last_peer_stream, Http2Error::kNoError, {});
    ctx.flush();
  }
  i.closing = true;
  i.cancel_timers();
  ctx.close(std::move(promise));
}

}  // namespace trellis::http2
