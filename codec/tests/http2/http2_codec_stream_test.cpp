// Http2FrameCodec, streams (RFC 9113 §5.1): states through HEADERS, DATA, END_STREAM and
// RST_STREAM in both directions, the stream-id rules, frames on idle and closed streams,
// CONTINUATION sequencing, the concurrency limit and the events the application sees.
#include <doctest/doctest.h>

#include "http2_codec_test_support.hpp"

using namespace trellis;
using namespace trellis::http2;
using namespace trellis::http2::test;

namespace {

constexpr std::uint8_t kData = 0, kHeaders = 1, kPriority = 2, kRst = 3, kWindowUpdate = 8,
                       kContinuation = 9;
constexpr std::uint8_t kEndHeaders = 4;

std::string block(const Http2Headers& h) {
  HpackEncoder e({.max_table_size = 0});
  ByteBuf out = ByteBuf::from("");
  e.begin_block(out);
  for (std::size_t i = 0; i < h.size(); ++i) e.encode_field(h[i].name, h[i].value, false, out);
  return out.to_string();
}

}  // namespace

TEST_CASE("a request and its response go through the stream states") {
  ServerPeer p;
  p.handshake();
  CHECK(p.codec->stream_state(1) == Http2StreamState::kIdle);
  p.headers(1, request("/upload", "POST"), false);
  CHECK(p.codec->stream_state(1) == Http2StreamState::kOpen);
  p.data(1, "body", true);
  CHECK(p.codec->stream_state(1) == Http2StreamState::kHalfClosedRemote);
  auto in = p.inbound();
  REQUIRE(in.size() == 2);
  CHECK(headers_text(in[0].get<Http2HeadersFrame>().headers) ==
        "[:method=POST,:scheme=https,:path=/upload,:authority=example.com]");
  CHECK(in[1].get<Http2DataFrame>().data.to_string() == "body");
  CHECK(in[1].get<Http2DataFrame>().end_stream);
  p.ch.write_outbound(headers_frame(1, response(), false));
  CHECK(p.codec->stream_state(1) == Http2StreamState::kHalfClosedRemote);
  p.ch.write_outbound(data_frame(1, "done", true));
  CHECK(p.codec->stream_state(1) == Http2StreamState::kClosed);
  CHECK(p.frames() == std::vector<std::string>{"HEADERS s=1 [:status=200]", "DATA s=1 end 4"});
  REQUIRE(p.ch.user_events().size() == 1);
  CHECK(p.ch.user_events().front().get<Http2StreamClosedEvent>().stream_id == 1);
  CHECK(p.codec->active_streams() == 0);
}

TEST_CASE("the server ending first leaves the stream half-closed (local)") {
  ServerPeer p;
  p.handshake();
  p.headers(1, request(), false);
  p.ch.write_outbound(headers_frame(1, response(), true));
  CHECK(p.codec->stream_state(1) == Http2StreamState::kHalfClosedLocal);
  p.data(1, "late", true);
  CHECK(p.codec->stream_state(1) == Http2StreamState::kClosed);
  CHECK_THROWS_AS(p.ch.write_outbound(data_frame(1, "x", true)), Http2Exception);
}

TEST_CASE("an even stream id from a client is a connection error PROTOCOL_ERROR") {
  ServerPeer p;
  p.handshake();
  p.headers(2, request(), true);
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 0 PROTOCOL_ERROR"});
  CHECK_FALSE(p.ch.is_open());
}

TEST_CASE("a stream id that is not above the last one is a connection error PROTOCOL_ERROR") {
  ServerPeer p;
  p.handshake();
  p.headers(5, request(), true);
  p.headers(3, request(), true);
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 5 PROTOCOL_ERROR"});
}

TEST_CASE("reusing a closed stream's id is a connection error") {
  ServerPeer p;
  p.handshake();
  p.headers(1, request(), true);
  p.ch.write_outbound(headers_frame(1, response(), true));
  CHECK(p.codec->stream_state(1) == Http2StreamState::kClosed);
  p.frames();
  p.headers(1, request(), true);
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 1 PROTOCOL_ERROR"});
}

TEST_CASE("DATA on an idle stream is a connection error PROTOCOL_ERROR") {
  ServerPeer p;
  p.handshake();
  p.data(1, "x", false);
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 0 PROTOCOL_ERROR"});
}

TEST_CASE("DATA on a closed stream is a stream error STREAM_CLOSED") {
  ServerPeer p;
  p.handshake();
  p.headers(1, request(), true);
  p.ch.write_outbound(headers_frame(1, response(), true));
  p.frames();
  p.data(1, "x", false);
  CHECK(p.frames() == std::vector<std::string>{"RST s=1 STREAM_CLOSED"});
  CHECK(p.ch.is_open());
}

TEST_CASE("DATA and HEADERS on a half-closed (remote) stream are stream errors STREAM_CLOSED") {
  ServerPeer p;
  p.handshake();
  p.headers(1, request(), true);
  p.data(1, "x", false);
  CHECK(p.frames() == std::vector<std::string>{"RST s=1 STREAM_CLOSED"});
  CHECK(p.codec->stream_state(1) == Http2StreamState::kClosed);
  p.headers(3, request(), true);
  p.headers(3, Http2Headers{{"x-trailer", "1"}}, true);
  CHECK(p.frames() == std::vector<std::string>{"RST s=3 STREAM_CLOSED"});
  CHECK(p.ch.is_open());
}

TEST_CASE("frames the peer sent before it saw the codec's RST_STREAM are ignored") {
  ServerPeer p;
  p.handshake();
  p.headers(1, request(), false);
  p.ch.write_outbound(Http2ResetFrame{1, Http2Error::kCancel});
  CHECK(p.frames() == std::vector<std::string>{"RST s=1 CANCEL"});
  p.data(1, "in flight", false);
  p.headers(1, Http2Headers{{"x-trailer", "1"}}, true);
  CHECK(p.frames().empty());
  CHECK(p.ch.is_open());
}

TEST_CASE("RST_STREAM from the peer closes the stream and is passed on") {
  ServerPeer p;
  p.handshake();
  p.headers(1, request(), false);
  p.inbound();
  p.send([&](CompositeByteBuf& out) { p.writer.write_rst_stream(out, 1, Http2Error::kCancel); });
  CHECK(p.codec->stream_state(1) == Http2StreamState::kClosed);
  auto in = p.inbound();
  REQUIRE(in.size() == 1);
  CHECK(in[0].get<Http2ResetFrame>().error_code == Http2Error::kCancel);
  CHECK(p.frames().empty());
  CHECK_THROWS_AS(p.ch.write_outbound(headers_frame(1, response(), true)), Http2Exception);
}

TEST_CASE("RST_STREAM and WINDOW_UPDATE on an idle stream are connection errors PROTOCOL_ERROR") {
  ServerPeer p;
  p.handshake();
  p.raw_frame(kRst, 0, 1, u32(8));
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 0 PROTOCOL_ERROR"});
  ServerPeer q;
  q.handshake();
  q.raw_frame(kWindowUpdate, 0, 1, u32(10));
  CHECK(q.frames() == std::vector<std::string>{"GOAWAY 0 PROTOCOL_ERROR"});
}

TEST_CASE("PRIORITY is parsed and ignored, also on idle streams") {
  ServerPeer p;
  p.handshake();
  p.raw_frame(kPriority, 0, 7, u32(0) + std::string(1, '\x10'));
  CHECK(p.frames().empty());
  CHECK(p.inbound().empty());
  p.headers(1, request(), true);  // stream 7 was only prioritised, not opened
  CHECK(p.codec->stream_state(1) == Http2StreamState::kHalfClosedRemote);
}

TEST_CASE("a header block split over CONTINUATION frames is one HEADERS message") {
  ServerPeer p;
  p.handshake();
  const std::string b = block(request("/continued"));
  p.raw_frame(kHeaders, 1, 1, b.substr(0, 5));  // END_STREAM, no END_HEADERS
  p.raw_frame(kContinuation, 0, 1, b.substr(5, 5));
  p.raw_frame(kContinuation, kEndHeaders, 1, b.substr(10));
  auto in = p.inbound();
  REQUIRE(in.size() == 1);
  CHECK(in[0].get<Http2HeadersFrame>().headers.get(":path") == "/continued");
  CHECK(p.codec->stream_state(1) == Http2StreamState::kHalfClosedRemote);
}

TEST_CASE("a frame interleaved in a header block is a connection error PROTOCOL_ERROR") {
  ServerPeer p;
  p.handshake();
  const std::string b = block(request());
  p.raw_frame(kHeaders, 1, 1, b.substr(0, 5));
  p.raw_frame(kData, 0, 1, "x");
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 0 PROTOCOL_ERROR"});
  ServerPeer q;
  q.handshake();
  q.raw_frame(kHeaders, 1, 1, b.substr(0, 5));
  q.raw_frame(kContinuation, kEndHeaders, 3, b.substr(5));
  CHECK(q.frames() == std::vector<std::string>{"GOAWAY 0 PROTOCOL_ERROR"});
}

TEST_CASE("a CONTINUATION without HEADERS is a connection error PROTOCOL_ERROR") {
  ServerPeer p;
  p.handshake();
  p.raw_frame(kContinuation, kEndHeaders, 1, block(request()));
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 0 PROTOCOL_ERROR"});
}

TEST_CASE("a header block beyond the block limit is a connection error ENHANCE_YOUR_CALM") {
  Http2FrameCodecOptions o;
  o.max_header_block_size = 64;
  ServerPeer p(o);
  p.handshake();
  const std::string b = block(request());
  p.raw_frame(kHeaders, 1, 1, b);
  for (int i = 0; i < 3 && p.ch.is_open(); ++i) {
    p.raw_frame(kContinuation, 0, 1, std::string(30, '\x40'));
  }
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 0 ENHANCE_YOUR_CALM"});
}

TEST_CASE("a header list above max_header_list_size is a stream error; the next stream works") {
  Http2FrameCodecOptions o;
  o.max_header_list_size = 300;
  ServerPeer p(o);
  p.handshake();
  Http2Headers big = request();
  big.add("x-big", std::string(400, 'a'));
  p.headers(1, big, false);
  CHECK(p.frames() == std::vector<std::string>{"RST s=1 PROTOCOL_ERROR"});
  CHECK(p.codec->stream_state(1) == Http2StreamState::kClosed);
  p.data(1, "in flight", true);  // sent before the peer saw the RST_STREAM: ignored
  CHECK(p.frames().empty());
  p.headers(3, request(), true);
  CHECK(p.codec->stream_state(3) == Http2StreamState::kHalfClosedRemote);
  CHECK(p.ch.is_open());
}

TEST_CASE("streams beyond max_concurrent_streams are refused with REFUSED_STREAM") {
  Http2FrameCodecOptions o;
  o.max_concurrent_streams = 2;
  ServerPeer p(o);
  p.handshake();
  p.headers(1, request(), true);
  p.headers(3, request(), true);
  p.headers(5, request(), true);
  CHECK(p.frames() == std::vector<std::string>{"RST s=5 REFUSED_STREAM"});
  CHECK(p.codec->active_streams() == 2);
  REQUIRE(p.ch.user_events().size() == 1);
  CHECK(p.ch.user_events().front().get<Http2StreamErrorEvent>().error_code ==
        Http2Error::kRefusedStream);
  p.ch.write_outbound(headers_frame(1, response(), true));
  p.headers(7, request(), true);  // room again
  CHECK(p.codec->stream_state(7) == Http2StreamState::kHalfClosedRemote);
  CHECK(p.frames() == std::vector<std::string>{"HEADERS s=1 end [:status=200]"});
}

TEST_CASE("a server cannot open streams and writes on unknown streams fail") {
  ServerPeer p;
  p.handshake();
  CHECK_THROWS_AS(p.ch.write_outbound(headers_frame(2, response(), true)), Http2Exception);
  CHECK_THROWS_AS(p.ch.write_outbound(data_frame(1, "x", true)), Http2Exception);
  CHECK(p.ch.is_open());
}

TEST_CASE("trailers follow the data of a request") {
  ServerPeer p;
  p.handshake();
  p.headers(1, request("/", "POST"), false);
  p.data(1, "abc", false);
  p.headers(1, Http2Headers{{"x-checksum", "1"}}, true);
  auto in = p.inbound();
  REQUIRE(in.size() == 3);
  CHECK(in[2].get<Http2HeadersFrame>().end_stream);
  CHECK(p.codec->stream_state(1) == Http2StreamState::kHalfClosedRemote);
}

TEST_CASE("a client codec opens odd streams and a server's HEADERS on an even one is an error") {
  Http2FrameCodecOptions o;
  o.role = Http2Role::kClient;
  auto codec = std::make_shared<Http2FrameCodec>(o);
  EmbeddedChannel ch(codec);
  ByteBuf first = take_outbound(ch);
  CHECK(first.to_string().starts_with(std::string(kHttp2ClientPreface)));
  CHECK(codec->next_stream_id() == 1);
  Http2FrameWriter server;
  CompositeByteBuf out;
  server.write_settings(out, std::vector<Http2Setting>{});
  ch.write_inbound(out.consolidate());
  CHECK_THROWS_AS(ch.write_outbound(headers_frame(2, request(), true)), Http2Exception);
  ch.write_outbound(headers_frame(1, request(), true));
  CHECK(codec->stream_state(1) == Http2StreamState::kHalfClosedLocal);
  CHECK(codec->next_stream_id() == 3);
  CompositeByteBuf push;
  server.write_headers(push, 2, response(), true);
  ch.write_inbound(push.consolidate());
  CHECK_FALSE(ch.is_open());
}

TEST_CASE("a client codec keeps to the server's SETTINGS_MAX_CONCURRENT_STREAMS") {
  Http2FrameCodecOptions o;
  o.role = Http2Role::kClient;
  auto codec = std::make_shared<Http2FrameCodec>(o);
  EmbeddedChannel ch(codec);
  Http2FrameWriter server;
  CompositeByteBuf out;
  server.write_settings(out, std::vector<Http2Setting>{{3, 1}});
  ch.write_inbound(out.consolidate());
  CHECK(codec->peer_max_concurrent_streams() == 1);
  ch.write_outbound(headers_frame(1, request(), false));
  CHECK_THROWS_AS(ch.write_outbound(headers_frame(3, request(), false)), Http2Exception);
  ch.write_outbound(Http2ResetFrame{1, Http2Error::kCancel});
  ch.write_outbound(headers_frame(3, request(), false));
  CHECK(codec->stream_state(3) == Http2StreamState::kOpen);
}

TEST_CASE("PUSH_PROMISE to a client that disabled push is a connection error PROTOCOL_ERROR") {
  Http2FrameCodecOptions o;
  o.role = Http2Role::kClient;
  auto codec = std::make_shared<Http2FrameCodec>(o);
  EmbeddedChannel ch(codec);
  CHECK(take_outbound(ch).to_string().find(std::string("\x00\x02\x00\x00\x00\x00", 6)) !=
        std::string::npos);  // SETTINGS_ENABLE_PUSH 0
  Http2FrameWriter server;
  CompositeByteBuf out;
  server.write_settings(out, std::vector<Http2Setting>{});
  ch.write_inbound(out.consolidate());
  ch.write_outbound(headers_frame(1, request(), true));
  take_outbound(ch);
  CompositeByteBuf push;
  server.write_push_promise(push, 1, 2, request("/pushed"));
  ch.write_inbound(push.consolidate());
  CHECK_FALSE(ch.is_open());
  Http2FrameReader reader({.role = Http2Role::kServer, .check_connection_start = false});
  test::FrameText text;
  ByteBuf rest = take_outbound(ch);
  reader.read(rest, text);
  CHECK(text.frames == std::vector<std::string>{"GOAWAY 0 PROTOCOL_ERROR"});
}
