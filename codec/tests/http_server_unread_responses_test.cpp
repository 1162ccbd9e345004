// HttpServerCodec and a pipelining client that does not read its responses for a while, whose
// last request is incomplete: every complete request is answered, in order, before the codec
// gives up on the incomplete one; the header timeout of that request does not run while the
// responses before it wait for the client to read them; and a client that never reads is still
// closed after send_timeout.
#include <doctest/doctest.h>

#include <string>

#include "http_server_fixture.hpp"

using namespace trellis;
using namespace trellis::http;
using namespace trellis::testing::server_fixture;
using namespace std::chrono_literals;

namespace {

std::string pipelined(int n) {
  std::string batch;
  for (int i = 0; i < n; ++i) batch += "GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n";
  return batch;
}

// Every response of pipelined(n), in request order, from the start of wire; the offset after them.
std::size_t expect_in_order(const std::string& wire, int n) {
  std::size_t at = 0;
  for (int i = 0; i < n; ++i) {
    const std::string body = "\r\n\r\n/" + std::to_string(i);
    const auto found = wire.find(body, at);
    REQUIRE(found != std::string::npos);
    at = found + body.size();
  }
  return at;
}

std::size_t pending_bytes(EmbeddedChannel& ch) {
  return ch.unsafe().outbound_buffer()->total_pending_write_bytes();
}

}  // namespace

TEST_CASE("an incomplete request's header timeout waits until the responses before it are read") {
  // The responses stay under the high water mark: the channel stays writable, decoding goes on,
  // only the client does not read.
  Server s;
  s.ch.set_outbound_byte_budget(0);
  s.send(pipelined(20) + "GET /la");
  CHECK(s.answerer->seen() == 20);
  REQUIRE(s.ch.is_writable());
  REQUIRE(pending_bytes(s.ch) > 0);
  s.ch.advance_by(45s);  // past header_timeout (30 s) while the server holds 20 responses
  CHECK(s.ch.is_active());
  s.ch.set_outbound_byte_budget(std::nullopt);  // the client reads at last
  const std::string wire = s.out();
  CHECK(count(wire, "HTTP/1.1 200 OK") == 20);
  CHECK(count(wire, "408") == 0);
  expect_in_order(wire, 20);
  s.ch.advance_by(20s);  // the head's wait counts from when the responses were written
  s.send("st HTTP/1.1\r\nHost: x\r\n\r\n");  // the incomplete request completed
  const std::string last = s.out();
  CHECK(last.rfind("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n/last", 0) == 0);
  CHECK(s.answerer->seen() == 21);
  CHECK(s.ch.is_active());
}

TEST_CASE("an incomplete request after unread responses gets 408 after them, then the close") {
  Server s;
  s.ch.set_outbound_byte_budget(0);
  s.send(pipelined(20) + "GET /la");
  s.ch.advance_by(45s);
  s.ch.set_outbound_byte_budget(std::nullopt);
  std::string wire = s.out();
  s.ch.advance_by(2min);  // the rest of the head never comes
  wire += s.out();
  const std::size_t after = expect_in_order(wire, 20);
  CHECK(count(wire, "HTTP/1.1 200 OK") == 20);
  CHECK(wire.find("HTTP/1.1 408 Request Timeout\r\n", after) != std::string::npos);
  CHECK(count(wire, "HTTP/1.1 408") == 1);
  CHECK(s.ch.is_output_shutdown());  // lingering: the head may still be coming
}

TEST_CASE("a pipelining client that never reads, its last request incomplete, is closed") {
  bool writable = true;
  SUBCASE("responses under the high water mark") { writable = true; }
  SUBCASE("responses over the high water mark") { writable = false; }
  Server s(short_timeouts(), /*deferred=*/false, /*body_bytes=*/writable ? 0 : 1000);
  if (!writable) s.ch.config().set_write_buffer_water_mark(512, 1024);
  s.ch.set_outbound_byte_budget(0);
  s.send(pipelined(20) + "GET /la");
  CHECK(s.ch.is_writable() == writable);
  // A deadline still applies: send_timeout (60 s) from when the output was seen stalled, which
  // is at most the shortest timeout (30 s) after it stalled.
  s.ch.advance_by(60s - kOneNs);
  CHECK(s.ch.is_active());
  s.ch.advance_by(30s + kOneNs);
  CHECK_FALSE(s.ch.is_open());
}

TEST_CASE("a client that reads slowly but steadily is not closed for its unread responses") {
  Server s(short_timeouts(), /*deferred=*/false, /*body_bytes=*/200);
  s.ch.set_outbound_byte_budget(0);
  s.send(pipelined(100) + "GET /la");
  std::string wire;
  for (int i = 0; i < 30 && pending_bytes(s.ch) > 0; ++i) {
    s.ch.advance_by(20s);  // 10 minutes in all, well past every timeout
    s.ch.add_outbound_byte_budget(1000);
    wire += s.out();
    REQUIRE(s.ch.is_active());
  }
  CHECK(pending_bytes(s.ch) == 0);
  s.ch.set_outbound_byte_budget(std::nullopt);
  wire += s.out();
  expect_in_order(wire, 100);
  CHECK(count(wire, "408") == 0);
}
