#include "http2_frame_codec_impl.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <trellis/codec/byte_to_message_decoder.hpp>
#include <trellis/codec/http2/http2_header_validation.hpp>
#include <trellis/pipeline/event_executor.hpp>

namespace trellis::http2 {

void Http2FrameCodec::Impl::count_empty(bool empty, bool end_stream) {
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

void Http2FrameCodec::Impl::on_data(Http2DataFrame& f) {
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

void Http2FrameCodec::Impl::on_headers(Http2HeadersFrame& f) {
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

void Http2FrameCodec::Impl::fire_headers(Http2HeadersFrame& f) {
  Http2HeadersFrame out{f.stream_id, std::move(f.headers), f.end_stream, f.priority, f.padding};
  if (!spare_headers.empty()) {
    f.headers = std::move(spare_headers.back());
    spare_headers.pop_back();
  }
  ctx->fire_channel_read(Message(std::move(out)));
}

void Http2FrameCodec::Impl::on_priority(Http2PriorityFrame&) {}

void Http2FrameCodec::Impl::on_reset(Http2ResetFrame& f) {
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

void Http2FrameCodec::Impl::on_settings(Http2SettingsFrame& f) {
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

void Http2FrameCodec::Impl::apply_local(const std::vector<Http2Setting>& settings) {
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

void Http2FrameCodec::Impl::on_push_promise(Http2PushPromiseFrame&) {
  // Clients send SETTINGS_ENABLE_PUSH 0 (RFC 9113 §8.4); the reader refuses it at a server.
  connection_error(Http2Error::kProtocolError, "PUSH_PROMISE with push disabled");
}

void Http2FrameCodec::Impl::on_ping(Http2PingFrame& f) {
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

void Http2FrameCodec::Impl::on_go_away(Http2GoAwayFrame& f) {
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

void Http2FrameCodec::Impl::on_window_update(Http2WindowUpdateFrame& f) {
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

void Http2FrameCodec::Impl::on_unknown(Http2UnknownFrame& f) {
  if (closing) return;
  ctx->fire_channel_read(
      Message(Http2UnknownFrame{f.type, f.flags, f.stream_id, std::move(f.payload)}));
}

void Http2FrameCodec::Impl::read_bytes(ByteBuf&& buf) {
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

}  // namespace trellis::http2
