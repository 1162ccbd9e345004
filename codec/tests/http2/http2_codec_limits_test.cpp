// Http2FrameCodec, what a hostile peer gets: rapid reset (CVE-2023-44487) in virtual time, the
// control-frame flood of a peer that does not read (CVE-2019-9512/9515), the empty-frame flood
// (CVE-2019-9518), and malformed requests (RFC 9113 §8.2, §8.3) as stream errors.
#include <doctest/doctest.h>

#include <chrono>

#include <trellis/codec/http2/http2_header_validation.hpp>

#include "http2_codec_test_support.hpp"

using namespace trellis;
using namespace trellis::http2;
using namespace trellis::http2::test;
using namespace std::chrono_literals;

namespace {

constexpr std::uint8_t kData = 0, kHeaders = 1;
constexpr std::uint8_t kEndHeaders = 4;

void open_and_reset(ServerPeer& p, std::uint32_t id) {
  p.send([&](CompositeByteBuf& out) {
    p.writer.write_headers(out, id, request(), false);
    p.writer.write_rst_stream(out, id, Http2Error::kCancel);
  });
}

}  // namespace

TEST_CASE("more resets than max_resets_per_window within the window: GOAWAY ENHANCE_YOUR_CALM") {
  Http2FrameCodecOptions o;
  o.max_resets_per_window = 10;
  o.rapid_reset_window = 1s;
  ServerPeer p(o);
  p.handshake();
  for (std::uint32_t id = 1; id <= 19; id += 2) open_and_reset(p, id);
  CHECK(p.frames().empty());
  open_and_reset(p, 21);
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 21 ENHANCE_YOUR_CALM"});
  CHECK_FALSE(p.ch.is_open());
}

TEST_CASE("resets spread over windows stay under the limit") {
  Http2FrameCodecOptions o;
  o.max_resets_per_window = 10;
  o.rapid_reset_window = 1s;
  ServerPeer p(o);
  p.handshake();
  std::uint32_t id = 1;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 10; ++i, id += 2) open_and_reset(p, id);
    p.ch.advance_by(1s);
  }
  CHECK(p.frames().empty());
  CHECK(p.ch.is_open());
}

TEST_CASE("PING acknowledgements piling up for a peer that does not read: ENHANCE_YOUR_CALM") {
  Http2FrameCodecOptions o;
  o.max_queued_control_frames = 20;
  ServerPeer p(o);
  p.handshake();
  p.ch.set_writable(false);
  for (int i = 0; i < 20; ++i) {
    p.send([&](CompositeByteBuf& out) { p.writer.write_ping(out, false, i); });
  }
  CHECK(p.ch.is_open());
  p.send([&](CompositeByteBuf& out) { p.writer.write_ping(out, false, 99); });
  CHECK_FALSE(p.ch.is_open());
}

TEST_CASE("control frames do not count while the peer reads") {
  Http2FrameCodecOptions o;
  o.max_queued_control_frames = 20;
  ServerPeer p(o);
  p.handshake();
  p.ch.set_writable(false);
  for (int i = 0; i < 15; ++i) {
    p.send([&](CompositeByteBuf& out) { p.writer.write_ping(out, false, i); });
  }
  p.ch.set_writable(true);  // the peer read: the count starts again
  p.ch.set_writable(false);
  for (int i = 0; i < 15; ++i) {
    p.send([&](CompositeByteBuf& out) { p.writer.write_ping(out, false, i); });
  }
  CHECK(p.ch.is_open());
  p.ch.set_writable(true);
  CHECK(p.frames().size() == 30);
}

TEST_CASE("a SETTINGS flood against a peer that does not read: ENHANCE_YOUR_CALM") {
  Http2FrameCodecOptions o;
  o.max_queued_control_frames = 5;
  ServerPeer p(o);
  p.handshake();
  p.ch.set_writable(false);
  for (int i = 0; i < 6 && p.ch.is_open(); ++i) {
    p.send(
        [&](CompositeByteBuf& out) { p.writer.write_settings(out, std::vector<Http2Setting>{}); });
  }
  CHECK_FALSE(p.ch.is_open());
}

TEST_CASE("consecutive empty DATA frames beyond the limit: GOAWAY ENHANCE_YOUR_CALM") {
  ServerPeer p;  // default: 2
  p.handshake();
  p.headers(1, request("/", "POST"), false);
  p.data(1, "", false);
  p.data(1, "", false);
  p.data(1, "x", false);  // resets the count
  p.data(1, "", false);
  p.data(1, "", false);
  CHECK(p.ch.is_open());
  p.data(1, "", false);
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 1 ENHANCE_YOUR_CALM"});
}

TEST_CASE("empty HEADERS frames count as empty frames too") {
  ServerPeer p;
  p.handshake();
  p.headers(1, request("/", "POST"), false);
  p.data(1, "", false);
  p.data(1, "", false);
  p.raw_frame(kHeaders, kEndHeaders, 3, "");
  CHECK(p.frames() == std::vector<std::string>{"GOAWAY 1 ENHANCE_YOUR_CALM"});
}

TEST_CASE("an empty DATA frame with END_STREAM is not part of a flood") {
  ServerPeer p;
  p.handshake();
  for (std::uint32_t id = 1; id <= 11; id += 2) {
    p.headers(id, request("/", "POST"), false);
    p.raw_frame(kData, 1, id, "");
  }
  CHECK(p.ch.is_open());
  CHECK(p.frames().empty());
}

TEST_CASE("malformed requests are stream errors PROTOCOL_ERROR and the connection goes on") {
  struct Case {
    const char* what;
    Http2Headers headers;
  };
  const Case cases[] = {
      {"upper case name",
       Http2Headers{{":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {"X-Upper", "1"}}},
      {"no :method", Http2Headers{{":scheme", "https"}, {":path", "/"}}},
      {"no :scheme", Http2Headers{{":method", "GET"}, {":path", "/"}}},
      {"no :path", Http2Headers{{":method", "GET"}, {":scheme", "https"}}},
      {"empty :path", Http2Headers{{":method", "GET"}, {":scheme", "https"}, {":path", ""}}},
      {"twice :path",
       Http2Headers{{":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {":path", "/"}}},
      {"unknown pseudo",
       Http2Headers{{":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {":foo", "1"}}},
      {"response pseudo",
       Http2Headers{{":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {":status", "200"}}},
      {"connection",
       Http2Headers{
           {":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {"connection", "keep-alive"}}},
      {"transfer-encoding", Http2Headers{{":method", "GET"},
                                         {":scheme", "https"},
                                         {":path", "/"},
                                         {"transfer-encoding", "chunked"}}},
      {"upgrade",
       Http2Headers{
           {":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {"upgrade", "websocket"}}},
      {"te gzip",
       Http2Headers{{":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {"te", "gzip"}}},
      {"CONNECT with path",
       Http2Headers{{":method", "CONNECT"}, {":authority", "a:443"}, {":path", "/"}}},
      {"CONNECT without authority", Http2Headers{{":method", "CONNECT"}}},
      {"bad content-length",
       Http2Headers{
           {":method", "POST"}, {":scheme", "https"}, {":path", "/"}, {"content-length", "12a"}}},
      {"value with LF",
       Http2Headers{{":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {"x-a", "a\nb"}}},
      {"value with leading space",
       Http2Headers{{":method", "GET"}, {":scheme", "https"}, {":path", "/"}, {"x-a", " a"}}},
  };
  ServerPeer p;
  p.handshake();
  std::uint32_t id = 1;
  for (const Case& c : cases) {
    CAPTURE(c.what);
    p.headers(id, c.headers, true);
    CHECK(p.frames() ==
          std::vector<std::string>{"RST s=" + std::to_string(id) + " PROTOCOL_ERROR"});
    CHECK(p.inbound().empty());
    id += 2;
  }
  p.headers(id, request(), true);
  CHECK(p.inbound().size() == 1);
  CHECK(p.ch.is_open());
}

TEST_CASE("valid requests pass validation") {
  CHECK_FALSE(validate_request_headers(request()));
  CHECK_FALSE(validate_request_headers(
      Http2Headers{{":method", "CONNECT"}, {":authority", "example.com:443"}}));
  CHECK_FALSE(validate_request_headers(Http2Headers{{":method", "POST"},
                                                    {":scheme", "https"},
                                                    {":path", "/"},
                                                    {"te", "trailers"},
                                                    {"content-length", "5"}}));
  CHECK(content_length_of(Http2Headers{{"content-length", "42"}}) == 42);
  CHECK(content_length_of(Http2Headers{{"content-length", "1"}, {"content-length", "2"}}) == -1);
  CHECK_FALSE(content_length_of(request()));
}

TEST_CASE("DATA that does not add up to the content-length is a stream error PROTOCOL_ERROR") {
  Http2Headers h = request("/", "POST");
  h.add("content-length", "5");
  ServerPeer p;
  p.handshake();
  p.headers(1, h, false);
  p.data(1, "abcdef", false);  // more than declared
  CHECK(p.frames() == std::vector<std::string>{"RST s=1 PROTOCOL_ERROR"});
  p.headers(3, h, false);
  p.data(3, "abc", true);  // less than declared
  CHECK(p.frames() == std::vector<std::string>{"RST s=3 PROTOCOL_ERROR"});
  p.headers(5, h, true);  // none at all
  CHECK(p.frames() == std::vector<std::string>{"RST s=5 PROTOCOL_ERROR"});
  p.headers(7, h, false);
  p.data(7, "abcde", true);
  CHECK(p.frames().empty());
  CHECK(p.codec->stream_state(7) == Http2StreamState::kHalfClosedRemote);
}

TEST_CASE("trailers with pseudo-headers or without END_STREAM are stream errors") {
  ServerPeer p;
  p.handshake();
  p.headers(1, request("/", "POST"), false);
  p.headers(1, Http2Headers{{":path", "/x"}}, true);
  CHECK(p.frames() == std::vector<std::string>{"RST s=1 PROTOCOL_ERROR"});
  p.headers(3, request("/", "POST"), false);
  p.headers(3, Http2Headers{{"x-t", "1"}}, false);
  CHECK(p.frames() == std::vector<std::string>{"RST s=3 PROTOCOL_ERROR"});
}

TEST_CASE("a stream error event tells the application what happened") {
  ServerPeer p;
  p.handshake();
  p.headers(1, Http2Headers{{":method", "GET"}}, true);
  REQUIRE(p.ch.user_events().size() == 1);
  const auto& e = p.ch.user_events().front().get<Http2StreamErrorEvent>();
  CHECK(e.stream_id == 1);
  CHECK(e.error_code == Http2Error::kProtocolError);
  CHECK(e.message.find("no :scheme") != std::string::npos);
}

TEST_CASE("validation can be turned off") {
  Http2FrameCodecOptions o;
  o.validate_headers = false;
  ServerPeer p(o);
  p.handshake();
  p.headers(1, Http2Headers{{":method", "GET"}, {"connection", "close"}}, true);
  CHECK(p.frames().empty());
  CHECK(p.inbound().size() == 1);
}
