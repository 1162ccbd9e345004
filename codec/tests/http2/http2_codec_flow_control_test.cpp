// Http2FrameCodec, flow control (RFC 9113 §5.2, §6.9): outbound DATA sent as far as the windows
// allow, queued beyond and released by WINDOW_UPDATE or a larger initial window; negative windows
// after SETTINGS; overflow past 2^31-1; inbound windows given back as the application consumes;
// per-stream writability.
#include <doctest/doctest.h>

#include "http2_codec_test_support.hpp"

using namespace trellis;
using namespace trellis::http2;
using namespace trellis::http2::test;

namespace {

constexpr std::uint8_t kSettings = 4, kWindowUpdate = 8;

std::string setting(std::uint16_t id, std::uint32_t value) {
  return std::string{static_cast<char>(id >> 8), static_cast<char>(id)} + u32(value);
}

// Stream 1 open on `p` (request headers without END_STREAM, the response headers sent), after a
// handshake with the given peer settings.
void open_stream(ServerPeer& p, std::vector<Http2Setting> settings) {
  p.handshake(std::move(settings));
  p.headers(1, request(), false);
  p.inbound();
  p.ch.write_outbound(headers_frame(1, response(), false));
  p.frames();
}

}  // namespace

TEST_CASE("DATA beyond the stream's window is queued and released by WINDOW_UPDATE") {
  ServerPeer p;
  open_stream(p, {{4, 10}});
  auto promise = p.ch.new_promise();
  p.ch.write(Message(data_frame(1, std::string(25, 'x'), true)), promise);
  p.ch.flush_outbound();
  CHECK(p.frames() == std::vector<std::string>{"DATA s=1 10"});
  CHECK(p.codec->stream_send_window(1) == 0);
  CHECK(p.codec->stream_queued_bytes(1) == 15);
  CHECK_FALSE(p.codec->is_stream_writable(1));
  CHECK_FALSE(promise.is_done());
  p.send([&](CompositeByteBuf& out) { p.writer.write_window_update(out, 1, 10); });
  CHECK(p.frames() == std::vector<std::string>{"DATA s=1 10"});
  CHECK_FALSE(promise.is_done());
  p.send([&](CompositeByteBuf& out) { p.writer.write_window_update(out, 1, 100); });
  CHECK(p.frames() == std::vector<std::string>{"DATA s=1 end 5"});
  CHECK(promise.is_success());
  CHECK(p.codec->stream_state(1) == Http2StreamState::kHalfClosedLocal);
}

TEST_CASE("trailers wait behind queued DATA") {
  ServerPeer p;
  open_stream(p, {{4, 4}});
  p.ch.write_outbound(data_frame(1, "12345678", false),
                      headers_frame(1, Http2Headers{{"x-t", "1"}}, true));
  CHECK(p.frames() == std::vector<std::string>{"DATA s=1 4"});
  CHECK(p.codec->stream_state(1) == Http2StreamState::kOpen);
  p.send([&](CompositeByteBuf& out) { p.writer.write_window_update(out, 1, 4); });
  CHECK(p.frames() == std::vector<std::string>{"DATA s=1 4", "HEADERS s=1 end [x-t=1]"});
  CHECK(p.codec->stream_state(1) == Http2StreamState::kHalfClosedLocal);
}

TEST_CASE("the connection's window limits every stream and its WINDOW_UPDATE releases them") {
  ServerPeer p(Http2FrameCodecOptions{});
  p.handshake({{4, 1 << 20}});
  p.headers(1, request(), false);
  p.headers(3, request(), false);
  p.ch.write_outbound(headers_frame(1, response(), false), headers_frame(3, response(), false));
  p.frames();
  p.ch.write_outbound(data_frame(1, std::string(60000, 'a'), true));
  p.ch.write_outbound(data_frame(3, std::string(10000, 'b'), true));
  CHECK(p.frames() == std::vector<std::string>{"DATA s=1 16384", "DATA s=1 16384", "DATA s=1 16384",
                                               "DATA s=1 end 10848", "DATA s=3 5535"});
  CHECK(p.codec->connection_send_window() == 0);
  p.ch.user_events().clear();
  p.send([&](CompositeByteBuf& out) { p.writer.write_window_update(out, 0, 100000); });
  CHECK(p.frames() == std::vector<std::string>{"DATA s=3 end 4465"});
  CHECK(p.codec->connection_send_window() == 100000 - 4465);
  bool connection_event = false;
  for (std::size_t i = 0; i < p.ch.user_events().size(); ++i) {
    if (auto* e = p.ch.user_events()[i].try_get<Http2StreamWritabilityChangedEvent>()) {
      connection_event |= e->stream_id == 0;
    }
  }
  CHECK(connection_event);
}

TEST_CASE("a smaller SETTINGS_INITIAL_WINDOW_SIZE makes an open stream's window negative") {
  ServerPeer p;
  open_stream(p, {});
  p.ch.write_outbound(data_frame(1, std::string(1000, 'x'), false));
  p.frames();
  CHECK(p.codec->stream_send_window(1) == 65535 - 1000);
  p.raw_frame(kSettings, 0, 0, setting(4, 100));
  CHECK(p.codec->stream_send_window(1) == 100 - 1000);
  p.ch.write_outbound(data_frame(1, "queued", true));
  CHECK(p.frames() == std::vector<std::string>{"SETTINGS ack"});
  p.send([&](CompositeByteBuf& out) { p.writer.write_window_update(out, 1, 900); });
  CHECK(p.frames().empty());  // window 0: still nothing
  p.send([&](CompositeByteBuf& out) { p.writer.write_window_update(out, 1, 6); });
  CHECK(p.frames() == std::vector<std::string>{"DATA s=1 end 6"});
}

TEST_CASE("a larger SETTINGS_INITIAL_WINDOW_SIZE releases queued data") {
  ServerPeer p;
  open_stream(p, {{4, 0}});
  p.ch.write_outbound(data_frame(1, "hello", true));
  CHECK(p.frames().empty());
  p.raw_frame(kSettings, 0, 0, setting(4, 5));
  CHECK(p.frames() == std::vector<std::string>{"SETTINGS ack", "DATA s=1 end 5"});
}

TEST_CASE("SETTINGS_INITIAL_WINDOW_SIZE that takes a window past 2^31-1 is FLOW_CONTROL_ERROR") {
  ServerPeer p;
  open_stream(p, {});
  p.send([&](CompositeByteBuf& out) { p.writer.write_window_update(out, 1, 0x7fffffff - 65535); });
  CHECK(p.codec->stream_send_window(1) == 0x7fffffff);
  p.raw_frame(kSettings, 0, 0, setting(4, 65536));
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 1 FLOW_CONTROL_ERROR"});
}

TEST_CASE("WINDOW_UPDATE past 2^31-1: a stream error on a stream, a connection error on 0") {
  ServerPeer p;
  open_stream(p, {});
  p.send([&](CompositeByteBuf& out) { p.writer.write_window_update(out, 1, 0x7fffffff); });
  CHECK(p.frames() == std::vector<std::string>{"RST s=1 FLOW_CONTROL_ERROR"});
  CHECK(p.ch.is_open());
  p.send([&](CompositeByteBuf& out) { p.writer.write_window_update(out, 0, 0x7fffffff); });
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 1 FLOW_CONTROL_ERROR"});
}

TEST_CASE("WINDOW_UPDATE with increment 0: a stream error on a stream, a connection error on 0") {
  ServerPeer p;
  open_stream(p, {});
  p.raw_frame(kWindowUpdate, 0, 1, u32(0));
  CHECK(p.frames() == std::vector<std::string>{"RST s=1 PROTOCOL_ERROR"});
  p.raw_frame(kWindowUpdate, 0, 0, u32(0));
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 1 PROTOCOL_ERROR"});
}

TEST_CASE("data read is given back with WINDOW_UPDATE once half a window was consumed") {
  ServerPeer p;
  p.handshake();
  p.headers(1, request("/", "POST"), false);
  p.data(1, std::string(16000, 'a'), false);
  p.data(1, std::string(16000, 'a'), false);
  CHECK(p.frames().empty());
  p.data(1, std::string(1000, 'a'), false);
  CHECK(p.frames() ==
        std::vector<std::string>{"WINDOW_UPDATE s=1 33000", "WINDOW_UPDATE s=0 33000"});
  CHECK(p.codec->stream_receive_window(1) == 65535);
  CHECK(p.codec->connection_receive_window() == 65535);
}

TEST_CASE("without auto_consume the windows open only as the application consumes") {
  Http2FrameCodecOptions o;
  o.auto_consume = false;
  ServerPeer p(o);
  p.handshake();
  p.headers(1, request("/", "POST"), false);
  p.data(1, std::string(40000, 'a'), false);
  CHECK(p.frames().empty());
  CHECK(p.codec->stream_receive_window(1) == 65535 - 40000);
  p.codec->consume_bytes(1, 30000);
  CHECK(p.frames().empty());
  p.codec->consume_bytes(1, 10000);
  CHECK(p.frames() ==
        std::vector<std::string>{"WINDOW_UPDATE s=1 40000", "WINDOW_UPDATE s=0 40000"});
  // The same through a written WINDOW_UPDATE frame.
  p.data(1, std::string(40000, 'a'), false);
  p.ch.write_outbound(Http2WindowUpdateFrame{1, 40000});
  CHECK(p.frames() ==
        std::vector<std::string>{"WINDOW_UPDATE s=1 40000", "WINDOW_UPDATE s=0 40000"});
}

TEST_CASE("DATA beyond the receive windows is FLOW_CONTROL_ERROR") {
  Http2FrameCodecOptions o;
  o.auto_consume = false;
  o.initial_window_size = 100;
  ServerPeer p(o);
  p.handshake();  // acknowledges the codec's SETTINGS: the stream window is 100
  p.headers(1, request("/", "POST"), false);
  p.data(1, std::string(101, 'a'), false);
  CHECK(p.frames() == std::vector<std::string>{"RST s=1 FLOW_CONTROL_ERROR"});
  ServerPeer q(Http2FrameCodecOptions{.auto_consume = false});
  q.handshake({{4, 1 << 20}});
  for (std::uint32_t id : {1u, 3u, 5u}) {
    q.headers(id, request("/", "POST"), false);
    q.data(id, std::string(16384, 'a'), false);
  }
  q.headers(7, request("/", "POST"), false);
  q.data(7, std::string(16384, 'a'), false);  // 65536 > 65535
  CHECK(q.frames() == std::vector<std::string>{"GOAWAY 7 FLOW_CONTROL_ERROR"});
}

TEST_CASE("padding counts against the windows and is given back at once") {
  Http2FrameCodecOptions o;
  o.auto_consume = false;
  ServerPeer p(o);
  p.handshake();
  p.headers(1, request("/", "POST"), false);
  p.data(1, "abc", false, 200);
  CHECK(p.codec->stream_receive_window(1) == 65535 - 203);
  p.codec->consume_bytes(1, 3);
  CHECK(p.codec->stream_receive_window(1) == 65535 - 203);  // below the update threshold
}

TEST_CASE("a larger connection window is announced after the SETTINGS") {
  Http2FrameCodecOptions o;
  o.connection_window_size = 1 << 20;
  ServerPeer p(o);
  CHECK(p.frames() ==
        std::vector<std::string>{"SETTINGS 3=100 6=16384", "WINDOW_UPDATE s=0 983041"});
  CHECK(p.codec->connection_receive_window() == 1 << 20);
}

TEST_CASE("a stream's writability follows its window and fires an event when it changes") {
  ServerPeer p;
  open_stream(p, {{4, 5}});
  CHECK(p.codec->is_stream_writable(1));
  p.ch.user_events().clear();
  p.ch.write_outbound(data_frame(1, "0123456789", false));
  CHECK_FALSE(p.codec->is_stream_writable(1));
  REQUIRE(p.ch.user_events().size() == 1);
  CHECK(p.ch.user_events().front().get<Http2StreamWritabilityChangedEvent>().stream_id == 1);
  p.send([&](CompositeByteBuf& out) { p.writer.write_window_update(out, 1, 10); });
  CHECK(p.codec->is_stream_writable(1));
  CHECK(p.ch.user_events().size() == 2);
}

TEST_CASE("queued data of a reset stream fails its promise") {
  ServerPeer p;
  open_stream(p, {{4, 0}});
  auto promise = p.ch.new_promise();
  p.ch.write(Message(data_frame(1, "never", true)), promise);
  p.ch.flush_outbound();
  p.send([&](CompositeByteBuf& out) { p.writer.write_rst_stream(out, 1, Http2Error::kCancel); });
  CHECK(promise.is_done());
  CHECK_FALSE(promise.is_success());
}

TEST_CASE("the unconsumed data of a stream that closes goes back to the connection's window") {
  Http2FrameCodecOptions o;
  o.auto_consume = false;
  ServerPeer p(o);
  p.handshake();
  p.headers(1, request("/", "POST"), false);
  p.data(1, std::string(40000, 'a'), false);
  CHECK(p.frames().empty());
  p.send([&](CompositeByteBuf& out) { p.writer.write_rst_stream(out, 1, Http2Error::kCancel); });
  CHECK(p.frames() == std::vector<std::string>{"WINDOW_UPDATE s=0 40000"});
  p.codec->consume_bytes(1, 40000);  // too late: ignored
  CHECK(p.frames().empty());
}

TEST_CASE("DATA on a closed stream still counts against the connection's window") {
  Http2FrameCodecOptions o;
  o.auto_consume = false;
  ServerPeer p(o);
  p.handshake();
  p.headers(1, request(), true);
  p.ch.write_outbound(headers_frame(1, response(), true));
  p.frames();
  p.data(1, std::string(16000, 'a'), false);
  CHECK(p.frames() == std::vector<std::string>{"RST s=1 STREAM_CLOSED"});
  // After its RST_STREAM the codec ignores the stream's frames, but not their octets.
  p.data(1, std::string(16384, 'a'), false);
  p.data(1, std::string(16384, 'a'), false);
  CHECK(p.frames() == std::vector<std::string>{"WINDOW_UPDATE s=0 48768"});
}

TEST_CASE("DATA is split at the peer's SETTINGS_MAX_FRAME_SIZE") {
  ServerPeer p;
  open_stream(p, {{5, 32768}, {4, 1 << 20}});
  p.send([&](CompositeByteBuf& out) { p.writer.write_window_update(out, 0, 1 << 20); });
  p.reader.set_max_frame_size(32768);
  p.ch.write_outbound(data_frame(1, std::string(40000, 'x'), true));
  CHECK(p.frames() == std::vector<std::string>{"DATA s=1 32768", "DATA s=1 end 7232"});
}
