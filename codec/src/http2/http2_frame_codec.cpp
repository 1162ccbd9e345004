#include <trellis/codec/http2/http2_frame_codec.hpp>

#include <utility>
#include <vector>

#include "http2_frame_codec_impl.hpp"

namespace trellis::http2 {

void Http2FrameCodec::Impl::write_data(Http2DataFrame& f, ChannelPromise& promise) {
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

void Http2FrameCodec::Impl::write_headers(Http2HeadersFrame& f, ChannelPromise& promise) {
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
  } else if (s->end_queued || (s->state != State::kOpen && s->state != State::kHalfClosedRemote)) {
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

void Http2FrameCodec::Impl::write_reset(const Http2ResetFrame& f, ChannelPromise& promise) {
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

void Http2FrameCodec::Impl::write_frame(ChannelHandlerContext& c, Message& msg,
                                        ChannelPromise& promise) {
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
  return next > Impl::kMaxStreamId ? 0 : next;
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
