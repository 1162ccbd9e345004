// Http2FrameCodec, connection level: the preface and SETTINGS exchange (bad values, the ACK
// deadline), PING answers, GOAWAY sent on connection errors and received, the close and the
// graceful shutdown.
#include <doctest/doctest.h>

#include <chrono>

#include "http2_codec_test_support.hpp"

using namespace trellis;
using namespace trellis::http2;
using namespace trellis::http2::test;
using namespace std::chrono_literals;

namespace {

constexpr std::uint8_t kSettings = 4, kPing = 6, kGoAway = 7;

std::string setting(std::uint16_t id, std::uint32_t value) {
  return std::string{static_cast<char>(id >> 8), static_cast<char>(id)} + u32(value);
}

}  // namespace

TEST_CASE("a server codec sends its SETTINGS at once and acknowledges the client's") {
  ServerPeer p;
  CHECK(p.frames() == std::vector<std::string>{"SETTINGS 3=100 6=16384"});
  p.send([&](CompositeByteBuf& out) {
    p.writer.write_preface(out);
    p.writer.write_settings(out, std::vector<Http2Setting>{{4, 1000}});
  });
  CHECK(p.frames() == std::vector<std::string>{"SETTINGS ack"});
  auto in = p.inbound();
  REQUIRE(in.size() == 1);
  CHECK(in[0].get<Http2SettingsFrame>().settings == std::vector<Http2Setting>{{4, 1000}});
  CHECK(p.codec->peer_initial_window_size() == 1000);
}

TEST_CASE("a wrong client preface is a connection error PROTOCOL_ERROR") {
  ServerPeer p;
  p.frames();
  p.send_raw("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 0 PROTOCOL_ERROR"});
  CHECK_FALSE(p.ch.is_open());
}

TEST_CASE("a first frame other than SETTINGS is a connection error PROTOCOL_ERROR") {
  ServerPeer p;
  p.frames();
  p.send([&](CompositeByteBuf& out) {
    p.writer.write_preface(out);
    p.writer.write_ping(out, false, 1);
  });
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 0 PROTOCOL_ERROR"});
  CHECK_FALSE(p.ch.is_open());
}

TEST_CASE("SETTINGS with bad values are connection errors with the right code") {
  struct Case {
    std::uint16_t id;
    std::uint32_t value;
    const char* goaway;
  };
  for (const Case c :
       {Case{2, 2, "GOAWAY 0 PROTOCOL_ERROR"}, Case{4, 0x80000000u, "GOAWAY 0 FLOW_CONTROL_ERROR"},
        Case{5, 16383, "GOAWAY 0 PROTOCOL_ERROR"}, Case{5, 16777216, "GOAWAY 0 PROTOCOL_ERROR"}}) {
    CAPTURE(c.id);
    CAPTURE(c.value);
    ServerPeer p;
    p.handshake();
    p.raw_frame(kSettings, 0, 0, setting(c.id, c.value));
    CHECK(p.frames() == std::vector<std::string>{c.goaway});
    CHECK_FALSE(p.ch.is_open());
  }
}

TEST_CASE("a SETTINGS frame of a bad length or on a stream is a connection error") {
  ServerPeer p;
  p.handshake();
  p.raw_frame(kSettings, 0, 0, "12345");
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 0 FRAME_SIZE_ERROR"});
  ServerPeer q;
  q.handshake();
  q.raw_frame(kSettings, 0, 1, "");
  CHECK(q.frames() == std::vector<std::string>{"GOAWAY 0 PROTOCOL_ERROR"});
}

TEST_CASE("a SETTINGS ACK nobody asked for is a connection error PROTOCOL_ERROR") {
  ServerPeer p;
  p.handshake();
  p.send([&](CompositeByteBuf& out) { p.writer.write_settings_ack(out); });
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 0 PROTOCOL_ERROR"});
}

TEST_CASE("a peer that does not acknowledge the SETTINGS in time gets SETTINGS_TIMEOUT") {
  Http2FrameCodecOptions o;
  o.settings_ack_timeout = 5s;
  ServerPeer p(o);
  p.frames();
  p.send([&](CompositeByteBuf& out) {
    p.writer.write_preface(out);
    p.writer.write_settings(out, std::vector<Http2Setting>{});
  });
  p.ch.advance_by(4s);
  CHECK(p.frames() == std::vector<std::string>{"SETTINGS ack"});
  CHECK(p.ch.is_open());
  p.ch.advance_by(1s);
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 0 SETTINGS_TIMEOUT"});
  CHECK_FALSE(p.ch.is_open());
}

TEST_CASE("an acknowledged SETTINGS stops the deadline") {
  Http2FrameCodecOptions o;
  o.settings_ack_timeout = 5s;
  ServerPeer p(o);
  p.handshake();
  p.ch.advance_by(10s);
  CHECK(p.frames().empty());
  CHECK(p.ch.is_open());
}

TEST_CASE("a PING is answered by the codec and passed on") {
  ServerPeer p;
  p.handshake();
  p.send([&](CompositeByteBuf& out) { p.writer.write_ping(out, false, 42); });
  CHECK(p.frames() == std::vector<std::string>{"PING ack 42"});
  auto in = p.inbound();
  REQUIRE(in.size() == 1);
  CHECK(in[0].get<Http2PingFrame>().opaque_data == 42);
  CHECK_FALSE(in[0].get<Http2PingFrame>().ack);
}

TEST_CASE("a PING of a bad length or on a stream is a connection error") {
  ServerPeer p;
  p.handshake();
  p.raw_frame(kPing, 0, 0, "1234567");
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 0 FRAME_SIZE_ERROR"});
  ServerPeer q;
  q.handshake();
  q.raw_frame(kPing, 0, 1, "12345678");
  CHECK(q.frames() == std::vector<std::string>{"GOAWAY 0 PROTOCOL_ERROR"});
}

TEST_CASE("a connection error's GOAWAY names the last stream processed") {
  ServerPeer p;
  p.handshake();
  p.headers(1, request(), true);
  p.headers(3, request(), true);
  p.raw_frame(kPing, 0, 3, "12345678");
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 3 PROTOCOL_ERROR"});
}

TEST_CASE("the application writes PING, SETTINGS and GOAWAY frames") {
  ServerPeer p;
  p.handshake();
  p.ch.write_outbound(Http2PingFrame{7, false});
  p.ch.write_outbound(Http2SettingsFrame{false, {{3, 10}}});
  p.headers(1, request(), true);
  p.ch.write_outbound(Http2GoAwayFrame{0, Http2Error::kEnhanceYourCalm, ByteBuf::from("bye")});
  CHECK(p.frames() ==
        std::vector<std::string>{"PING 7", "SETTINGS 3=10", "GOAWAY 1 ENHANCE_YOUR_CALM"});
  CHECK(p.codec->go_away_sent());
}

TEST_CASE("SETTINGS written by the application apply once the peer acknowledges them") {
  ServerPeer p;
  p.handshake();
  p.ch.write_outbound(Http2SettingsFrame{false, {{3, 1}}});
  p.frames();
  p.headers(1, request(), false);
  p.headers(3, request(), false);  // the limit is not in force yet
  CHECK(p.frames().empty());
  p.send([&](CompositeByteBuf& out) { p.writer.write_settings_ack(out); });
  p.headers(5, request(), false);
  CHECK(p.frames() == std::vector<std::string>{"RST s=5 REFUSED_STREAM"});
}

TEST_CASE("a GOAWAY from the peer is passed on and closes the streams above its last id") {
  Http2FrameCodecOptions o;
  o.role = Http2Role::kClient;
  auto codec = std::make_shared<Http2FrameCodec>(o);
  EmbeddedChannel ch(codec);
  take_outbound(ch);
  Http2FrameWriter server;
  CompositeByteBuf out;
  server.write_settings(out, std::vector<Http2Setting>{});
  ch.write_inbound(out.consolidate());
  ch.write_outbound(headers_frame(1, request(), false), headers_frame(3, request(), false));
  CHECK(codec->active_streams() == 2);
  ch.user_events().clear();
  CompositeByteBuf g;
  server.write_go_away(g, 1, Http2Error::kNoError);
  ch.write_inbound(g.consolidate());
  CHECK(codec->go_away_received());
  CHECK(codec->stream_state(1) == Http2StreamState::kOpen);
  CHECK(codec->stream_state(3) == Http2StreamState::kClosed);
  REQUIRE(ch.user_events().size() == 1);
  CHECK(ch.user_events().front().get<Http2StreamClosedEvent>().stream_id == 3);
  while (auto m = ch.read_inbound()) {
    if (m->is<Http2GoAwayFrame>()) CHECK(m->get<Http2GoAwayFrame>().last_stream_id == 1);
  }
  // No new stream after GOAWAY.
  CHECK_THROWS_AS(ch.write_outbound(headers_frame(5, request(), true)), Http2Exception);
}

TEST_CASE("closing the channel sends GOAWAY NO_ERROR first") {
  ServerPeer p;
  p.handshake();
  p.headers(1, request(), true);
  p.ch.close();
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 1 NO_ERROR"});
}

TEST_CASE(
    "a graceful shutdown sends GOAWAY 2^31-1, then the last stream after a PING, and "
    "closes once the streams are done") {
  ServerPeer p;
  p.handshake();
  p.headers(1, request(), true);
  p.codec->start_graceful_shutdown();
  CHECK(p.frames() ==
        std::vector<std::string>{"GOAWAY 2147483647 NO_ERROR", "PING 8390880572094378802"});
  p.headers(3, request(), true);  // in flight before the peer saw the GOAWAY: still served
  CHECK(p.codec->active_streams() == 2);
  p.send([&](CompositeByteBuf& out) { p.writer.write_ping(out, true, 8390880572094378802ull); });
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 3 NO_ERROR"});
  p.headers(5, request(), true);  // above the last id: ignored
  CHECK(p.codec->active_streams() == 2);
  CHECK(p.codec->stream_state(5) == Http2StreamState::kIdle);
  p.ch.write_outbound(headers_frame(1, response(), true));
  CHECK(p.ch.is_open());
  p.ch.write_outbound(headers_frame(3, response(), true));
  CHECK_FALSE(p.ch.is_open());
}

TEST_CASE("a graceful shutdown closes after its timeout when streams stay open") {
  Http2FrameCodecOptions o;
  o.graceful_shutdown_timeout = 3s;
  ServerPeer p(o);
  p.handshake();
  p.headers(1, request(), false);
  p.codec->start_graceful_shutdown();
  p.ch.advance_by(2s);
  CHECK(p.ch.is_open());
  p.ch.advance_by(1s);
  CHECK_FALSE(p.ch.is_open());
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 2147483647 NO_ERROR",
                                               "PING 8390880572094378802", "GOAWAY 1 NO_ERROR"});
}

TEST_CASE("an unknown frame type is passed on and changes nothing") {
  ServerPeer p;
  p.handshake();
  p.raw_frame(0x42, 0xff, 0, "xyz");
  auto in = p.inbound();
  REQUIRE(in.size() == 1);
  CHECK(in[0].get<Http2UnknownFrame>().type == 0x42);
  CHECK(p.frames().empty());
  CHECK(p.ch.is_open());
}

TEST_CASE("a GOAWAY on a stream is a connection error PROTOCOL_ERROR") {
  ServerPeer p;
  p.handshake();
  p.raw_frame(kGoAway, 0, 1, u32(0) + u32(0));
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 0 PROTOCOL_ERROR"});
}
