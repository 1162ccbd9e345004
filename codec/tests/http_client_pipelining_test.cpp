// HTTP/1.1 pipelining in HttpConnectionPool (HttpClientOptions::pipelining_depth) on an
// EmbeddedChannel: requests go out without waiting for the previous response, responses are
// matched in order, and a connection that fails fails every request in flight, each saying
// whether the server may have processed it.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "http_pool_fixture.hpp"

using namespace trellis;
using namespace trellis::http;
using trellis::testing::failure_as;
using trellis::testing::PoolFixture;

namespace {

HttpClientOptions pipelined(std::size_t depth) {
  HttpClientOptions o = PoolFixture::one_connection();
  o.pipelining_depth = depth;
  return o;
}

std::string get_line(const std::string& path) {
  return "GET " + path + " HTTP/1.1\r\nHost: server\r\n\r\n";
}

std::string ok(const std::string& body, const std::string& extra = "") {
  return "HTTP/1.1 200 OK\r\n" + extra + "Content-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

}  // namespace

TEST_CASE("Pipelining: requests go out at once and responses are matched in order") {
  PoolFixture f(pipelined(3));
  auto a = f.get("/a");
  auto b = f.get("/b");
  auto c = f.get("/c");
  auto d = f.get("/d");  // beyond the depth: waits
  CHECK(f.connects == 1);
  CHECK(f.sent() == get_line("/a") + get_line("/b") + get_line("/c"));
  CHECK(f.pool->waiting_requests() == 1);
  f.answer(ok("A") + ok("B"));
  CHECK(a.get().content.to_string() == "A");
  CHECK(b.get().content.to_string() == "B");
  CHECK_FALSE(c.is_done());
  CHECK(f.sent() == get_line("/d"));  // room again: the waiting one follows
  f.answer(ok("C") + ok("D"));
  CHECK(c.get().content.to_string() == "C");
  CHECK(d.get().content.to_string() == "D");
  CHECK(f.pool->idle_connections() == 1);
  CHECK(f.pool->connections_made() == 1);
}

TEST_CASE("Pipelining: off by default, one request at a time") {
  PoolFixture f;
  auto a = f.get("/a");
  auto b = f.get("/b");
  CHECK(f.sent() == get_line("/a"));
  f.answer(ok("A"));
  CHECK(f.sent() == get_line("/b"));
  f.answer(ok("B"));
  CHECK(b.get().content.to_string() == "B");
}

TEST_CASE("Pipelining: a close fails every request in flight as possibly processed") {
  PoolFixture f(pipelined(4));
  auto a = f.get("/a");
  auto b = f.get("/b");
  auto c = f.get("/c");
  f.sent();
  f.answer(ok("A") + "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\npart");
  CHECK(a.get().content.to_string() == "A");
  f.ch->close();
  for (auto* r : {&b, &c}) {
    const auto closed = failure_as<ConnectionClosedError>(*r);
    REQUIRE(closed.has_value());
    CHECK(closed->may_have_been_processed());
  }
  CHECK(f.pool->open_connections() == 0);
}

TEST_CASE("Pipelining: requests behind a Connection: close response were not processed") {
  PoolFixture f(pipelined(4));
  auto a = f.get("/a");
  auto b = f.get("/b");
  auto c = f.get("/c");
  f.sent();
  f.answer(ok("A", "Connection: close\r\n"));
  CHECK(a.get().content.to_string() == "A");
  for (auto* r : {&b, &c}) {
    const auto closed = failure_as<ConnectionClosedError>(*r);
    REQUIRE(closed.has_value());
    CHECK_FALSE(closed->may_have_been_processed());  // RFC 9112 §9.6: the server stops there
  }
  CHECK_FALSE(f.ch->is_open());
}

TEST_CASE("Pipelining: a malformed response fails every request in flight") {
  PoolFixture f(pipelined(2));
  auto a = f.get("/a");
  auto b = f.get("/b");
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n");
  CHECK(failure_as<codec::DecoderError>(a).has_value());
  CHECK(failure_as<codec::DecoderError>(b).has_value());
  CHECK_FALSE(f.ch->is_open());
}

TEST_CASE("Pipelining: nothing goes behind a request that says Connection: close") {
  PoolFixture f(pipelined(4));
  FullHttpRequest last;
  last.target = "/last";
  last.headers.add(header::kHost, "server");
  last.headers.add(header::kConnection, "close");
  Promise<FullHttpResponse> promise(&f.ch->event_loop());
  f.pool->submit(std::move(last), promise);
  auto after = f.get("/after");
  CHECK(f.sent() == "GET /last HTTP/1.1\r\nHost: server\r\nConnection: close\r\n\r\n");
  CHECK(f.pool->waiting_requests() == 1);
  f.answer(ok("L"));
  CHECK(promise.future().get().content.to_string() == "L");
}

TEST_CASE("Stale connection: a reused connection closed before any response byte is retried") {
  PoolFixture f;
  f.fresh_channels = true;
  auto first = f.get("/a");
  f.sent();
  f.answer(ok("A"));
  REQUIRE(first.is_success());
  auto second = f.get("/b");  // on the reused connection, which the server had closed
  CHECK(f.sent() == get_line("/b"));
  f.ch->close();
  CHECK_FALSE(second.is_done());
  REQUIRE(f.extra.size() == 1);  // sent again on a new connection
  auto& fresh = *f.extra.back();
  CHECK(testing::drain_outbound_bytes(fresh) == get_line("/b"));
  fresh.write_inbound(ByteBuf::from(ok("B")));
  REQUIRE(second.is_success());
  CHECK(second.get().content.to_string() == "B");
  CHECK(f.pool->retries() == 1);
}

TEST_CASE("Stale connection: a POST is not retried, nor a request once its response began") {
  PoolFixture f;
  f.fresh_channels = true;
  auto first = f.get("/a");
  f.sent();
  f.answer(ok("A"));
  FullHttpRequest post;
  post.method = HttpMethod::kPost;
  post.target = "/p";
  post.headers.add(header::kHost, "server");
  post.content = ByteBuf::from(std::string("x"));
  Promise<FullHttpResponse> promise(&f.ch->event_loop());
  f.pool->submit(std::move(post), promise);
  f.sent();
  f.ch->close();
  const auto closed = failure_as<ConnectionClosedError>(promise.future());
  REQUIRE(closed.has_value());
  CHECK(closed->may_have_been_processed());
  CHECK(f.pool->retries() == 0);

  // A GET on a reused fresh connection whose response is cut after its head: not stale.
  auto warm = f.get("/w");
  REQUIRE(f.extra.size() == 1);
  auto& second = *f.extra.back();
  testing::drain_outbound_bytes(second);
  second.write_inbound(ByteBuf::from(ok("W")));
  REQUIRE(warm.is_success());
  auto cut = f.get("/cut");
  testing::drain_outbound_bytes(second);
  second.write_inbound(ByteBuf::from(std::string("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")));
  second.close();
  CHECK(failure_as<ConnectionClosedError>(cut).has_value());
  CHECK(f.pool->retries() == 0);
}

TEST_CASE("Stale connection: retries can be turned off") {
  HttpClientOptions o = PoolFixture::one_connection();
  o.retry_on_stale_connection = false;
  PoolFixture f(o);
  f.fresh_channels = true;
  auto first = f.get("/a");
  f.sent();
  f.answer(ok("A"));
  auto second = f.get("/b");
  f.sent();
  f.ch->close();
  CHECK(failure_as<ConnectionClosedError>(second).has_value());
  CHECK(f.extra.empty());
}

TEST_CASE("Pipelining: a 100-continue request behind another keeps its body until 100 Continue") {
  PoolFixture f(pipelined(2));
  auto a = f.get("/a");
  FullHttpRequest post;
  post.method = HttpMethod::kPost;
  post.target = "/p";
  post.headers.add(header::kHost, "server");
  post.headers.add(header::kExpect, "100-continue");
  post.content = ByteBuf::from(std::string("body"));
  Promise<FullHttpResponse> promise(&f.ch->event_loop());
  f.pool->submit(std::move(post), promise);
  CHECK(f.sent() == get_line("/a") +
                        "POST /p HTTP/1.1\r\nHost: server\r\nExpect: 100-continue\r\n"
                        "Content-Length: 4\r\n\r\n");
  f.answer(ok("A"));
  CHECK(a.get().content.to_string() == "A");
  CHECK(f.sent().empty());  // the body still waits for the interim response
  f.answer("HTTP/1.1 100 Continue\r\n\r\n");
  CHECK(f.sent() == "body");
  f.answer(ok("P"));
  CHECK(promise.future().get().content.to_string() == "P");
  CHECK(f.pool->idle_connections() == 1);
}

TEST_CASE("Pipelining: a timed-out request closes the connection; the others say so") {
  HttpClientOptions o = pipelined(2);
  o.request_timeout = std::chrono::seconds(5);
  PoolFixture f(o);
  auto a = f.get("/a");
  f.ch->advance_by(std::chrono::seconds(1));
  f.ch->run_pending_tasks();
  auto b = f.get("/b");
  f.sent();
  f.ch->advance_by(std::chrono::seconds(4));  // /a's deadline, not /b's
  f.ch->run_pending_tasks();
  const auto timeout = failure_as<http::TimeoutError>(a);
  REQUIRE(timeout.has_value());
  CHECK(timeout->phase() == http::TimeoutError::Phase::kRequest);
  const auto closed = failure_as<ConnectionClosedError>(b);
  REQUIRE(closed.has_value());
  CHECK(closed->may_have_been_processed());
  CHECK_FALSE(f.ch->is_open());
}
