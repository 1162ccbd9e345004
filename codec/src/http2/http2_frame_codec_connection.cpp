#include "http2_frame_codec_impl.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <trellis/pipeline/event_executor.hpp>

namespace trellis::http2 {

void Http2FrameCodec::Impl::connection_error(Http2Error code, const std::string& text) {
  throw Http2ConnectionError(code, text);
}

void Http2FrameCodec::Impl::stream_error(std::uint32_t id, Http2Error code,
                                         const std::string& text) {
  throw Http2StreamError(id, code, text);
}

std::string Http2FrameCodec::Impl::sid(std::uint32_t id) { return "stream " + std::to_string(id); }

Http2FrameReaderOptions Http2FrameCodec::Impl::reader_options(const Http2FrameCodecOptions& o) {
  Http2FrameReaderOptions r;
  r.role = o.role;
  r.check_connection_start = true;
  r.max_frame_size = o.max_frame_size;
  r.max_header_table_size = HpackDecoder::kDefaultMaxTableSize;  // until the peer's ACK
  r.max_header_list_size = o.max_header_list_size;
  r.max_header_block_size = o.max_header_block_size;
  return r;
}

void Http2FrameCodec::Impl::start() {
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
    s.push_back(
        {static_cast<std::uint16_t>(Http2SettingId::kHeaderTableSize), options.header_table_size});
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

void Http2FrameCodec::Impl::sent_settings(std::vector<Http2Setting> s) {
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

void Http2FrameCodec::Impl::cancel_timers() noexcept {
  if (settings_timer.valid()) settings_timer.cancel();
  settings_timer = ScheduledFuture<void>();
  if (shutdown_timer.valid()) shutdown_timer.cancel();
  shutdown_timer = ScheduledFuture<void>();
}

void Http2FrameCodec::Impl::send_go_away(std::uint32_t last, Http2Error code,
                                         std::string_view debug, ChannelPromise promise) {
  CompositeByteBuf out = new_out();
  debug = debug.substr(0, kMaxDebugData);
  writer.write_go_away(out, last, code,
                       std::as_bytes(std::span<const char>(debug.data(), debug.size())));
  emit(out, std::move(promise));
  go_away_sent = true;
  go_away_sent_last = std::min(go_away_sent_last, last);
}

void Http2FrameCodec::Impl::fail_connection(Http2Error code, std::string_view why) {
  if (closing || ctx == nullptr) return;
  closing = true;
  cancel_timers();
  send_go_away(last_peer_stream, code, why);
  needs_flush = false;
  ctx->flush();
  ctx->close();
}

void Http2FrameCodec::Impl::check_drained() {
  if (graceful_final && streams.size() == 0 && !closing) {
    closing = true;
    cancel_timers();
    needs_flush = false;
    ctx->flush();
    ctx->close();
  }
}

void Http2FrameCodec::Impl::graceful_shutdown() {
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

detail::Http2Stream& Http2FrameCodec::Impl::open_stream(std::uint32_t id, bool local) {
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

void Http2FrameCodec::Impl::fail_pending(Http2Stream& s, const std::exception_ptr& error) {
  for (std::size_t i = s.pending_head; i < s.pending.size(); ++i) {
    s.pending[i].promise.try_set_exception(error);
  }
  s.pending.clear();
  s.pending_head = 0;
  s.pending_bytes = 0;
}

void Http2FrameCodec::Impl::close_stream(Http2Stream& s, bool reset_by_us) {
  const std::uint32_t id = s.id;
  if (s.has_pending()) {
    fail_pending(
        s, std::make_exception_ptr(Http2Exception(Http2Error::kStreamClosed, sid(id) + " closed")));
  }
  const std::uint32_t unconsumed = s.unconsumed;
  (s.local ? local_active : peer_active) -= 1;
  if (reset_by_us) note_reset(id);
  streams.erase(id);
  if (unconsumed != 0 && !closing) credit_connection(unconsumed);
  ctx->fire_user_event_triggered(Message(Http2StreamClosedEvent{id}));
  check_drained();
}

bool Http2FrameCodec::Impl::remote_end(Http2Stream& s) {
  if (s.state == State::kOpen) {
    s.state = State::kHalfClosedRemote;
    return true;
  }
  close_stream(s, false);
  return false;
}

bool Http2FrameCodec::Impl::local_end(Http2Stream& s) {
  if (s.state == State::kOpen) {
    s.state = State::kHalfClosedLocal;
    update_writability(s);
    return true;
  }
  close_stream(s, false);
  return false;
}

void Http2FrameCodec::Impl::reset_stream(std::uint32_t id, Http2Error code, std::string message) {
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

void Http2FrameCodec::Impl::credit_connection(std::uint32_t n) {
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

void Http2FrameCodec::Impl::credit_stream(Http2Stream& s, std::uint32_t n) {
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

void Http2FrameCodec::Impl::consume(std::uint32_t id, std::uint32_t n) {
  Http2Stream* s = streams.find(id);
  if (s == nullptr || n == 0) return;
  n = std::min(n, s->unconsumed);
  s->unconsumed -= n;
  credit_stream(*s, n);
  credit_connection(n);
}

bool Http2FrameCodec::Impl::writable(const Http2Stream& s) const noexcept {
  return (s.state == State::kOpen || s.state == State::kHalfClosedRemote) && !s.end_queued &&
         !s.has_pending() && s.send_window > 0 && conn_send_window > 0;
}

void Http2FrameCodec::Impl::update_writability(Http2Stream& s) {
  const bool w = writable(s);
  if (w == s.writable) return;
  s.writable = w;
  ctx->fire_user_event_triggered(Message(Http2StreamWritabilityChangedEvent{s.id}));
}

void Http2FrameCodec::Impl::update_connection_writability() {
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

void Http2FrameCodec::Impl::write_headers_now(Http2Stream& s, Http2HeadersFrame& f,
                                              ChannelPromise promise) {
  CompositeByteBuf out = new_out();
  writer.write_headers(out, s.id, f.headers, f.end_stream, f.priority, f.padding);
  emit(out, std::move(promise));
  recycle(f.headers);
}

void Http2FrameCodec::Impl::recycle(Http2Headers& h) {
  if (spare_headers.size() < kSpareHeaders) {
    h.clear();
    spare_headers.push_back(std::move(h));
  }
}

bool Http2FrameCodec::Impl::drain_stream(Http2Stream& s) {
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

void Http2FrameCodec::Impl::list_if_pending(Http2Stream& s) {
  if (s.has_pending() && !s.listed) {
    s.listed = true;
    pending_streams.push_back(s.id);
  }
}

void Http2FrameCodec::Impl::drain_all() {
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

}  // namespace trellis::http2
