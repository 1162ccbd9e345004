// HttpConnectionPool and HttpClientHandler on an EmbeddedChannel: reuse, queueing, interim
// responses, every way a response can end or fail, and the deadlines on virtual time.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <trellis/http.hpp>
#include <trellis/pipeline.hpp>
#include <trellis/testing.hpp>
#include <trellis/testing/doctest_helpers.hpp>

#include "http_pool_fixture.hpp"

using namespace trellis;
using namespace trellis::http;
using namespace std::chrono_literals;

using trellis::testing::failure_as;
using trellis::testing::PoolFixture;

TEST_CASE("HttpConnectionPool: a keep-alive connection carries one request after the other") {
  PoolFixture f;
  auto first = f.get("/a");
  CHECK(f.connects == 1);
  CHECK(f.sent() == "GET /a HTTP/1.1\r\nHost: server\r\n\r\n");
  CHECK_FALSE(first.is_done());
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi");
  REQUIRE(first.is_success());
  CHECK(first.get().status.code == 200);
  CHECK(first.get().content.to_string() == "hi");
  CHECK(f.pool->idle_connections() == 1);

  auto second = f.get("/b");
  CHECK(f.connects == 1);  // reused
  CHECK(f.sent() == "GET /b HTTP/1.1\r\nHost: server\r\n\r\n");
  f.answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  REQUIRE(second.is_success());
  CHECK(second.get().content.to_string() == "abc");
  CHECK(f.pool->connections_made() == 1);
  CHECK(f.ch->is_open());
}

TEST_CASE("HttpConnectionPool: requests beyond the connection limit wait their turn, in order") {
  PoolFixture f;
  auto a = f.get("/a");
  auto b = f.get("/b");
  auto c = f.get("/c");
  CHECK(f.connects == 1);
  CHECK(f.pool->waiting_requests() == 2);
  CHECK(f.sent() == "GET /a HTTP/1.1\r\nHost: server\r\n\r\n");  // one at a time: no pipelining
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na");
  CHECK(a.get().content.to_string() == "a");
  CHECK(f.sent() == "GET /b HTTP/1.1\r\nHost: server\r\n\r\n");
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb");
  CHECK(b.get().content.to_string() == "b");
  CHECK(f.sent() == "GET /c HTTP/1.1\r\nHost: server\r\n\r\n");
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nc");
  CHECK(c.get().content.to_string() == "c");
  CHECK(f.pool->waiting_requests() == 0);
}

TEST_CASE("HttpConnectionPool: 1xx interim responses are skipped") {
  PoolFixture f;
  auto r = f.get("/");
  f.sent();
  f.answer("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s>\r\n\r\n");
  CHECK_FALSE(r.is_done());
  f.answer("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
  REQUIRE(r.is_success());
  CHECK(r.get().status.code == 201);
}

TEST_CASE("HttpConnectionPool: a Connection: close response closes the connection") {
  PoolFixture f;
  auto r = f.get("/");
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok");
  REQUIRE(r.is_success());
  CHECK(r.get().content.to_string() == "ok");
  CHECK_FALSE(f.ch->is_open());
  CHECK(f.pool->open_connections() == 0);
  CHECK(f.pool->idle_connections() == 0);
  // The next request needs a new connection; this connector refuses it.
  auto next = f.get("/");
  CHECK(f.connects == 2);
  const auto refused = failure_as<ConnectError>(next);
  REQUIRE(refused.has_value());
  CHECK(refused->code() == std::errc::connection_refused);
}

TEST_CASE("HttpConnectionPool: a request with Connection: close does not leave its connection") {
  PoolFixture f;
  FullHttpRequest request;
  request.target = "/";
  request.headers.add(header::kHost, "server");
  request.headers.add(header::kConnection, "close");
  Promise<FullHttpResponse> promise(&f.ch->event_loop());
  f.pool->submit(std::move(request), promise);
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  CHECK(promise.future().is_success());
  CHECK_FALSE(f.ch->is_open());
}

TEST_CASE("HttpConnectionPool: a body delimited by the close is read to the close") {
  PoolFixture f;
  auto r = f.get("/");
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\n\r\npart one, ");
  f.answer("part two");
  CHECK_FALSE(r.is_done());
  f.ch->close();
  REQUIRE(r.is_success());
  CHECK(r.get().content.to_string() == "part one, part two");
  CHECK(f.pool->open_connections() == 0);
}

TEST_CASE(
    "HttpConnectionPool: a close in the middle of the body fails with ConnectionClosedError") {
  PoolFixture f;
  auto r = f.get("/");
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
  f.ch->close();
  const auto closed = failure_as<ConnectionClosedError>(r);
  REQUIRE(closed.has_value());
  CHECK(closed->may_have_been_processed());
  CHECK(f.pool->open_connections() == 0);
}

TEST_CASE("HttpConnectionPool: a close before any response fails with ConnectionClosedError") {
  PoolFixture f;
  auto r = f.get("/");
  f.sent();
  f.ch->close();
  const auto closed = failure_as<ConnectionClosedError>(r);
  REQUIRE(closed.has_value());
  CHECK(closed->may_have_been_processed());
}

TEST_CASE("HttpConnectionPool: a malformed response fails with DecoderError and is not reused") {
  PoolFixture f;
  auto r = f.get("/");
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n");
  REQUIRE(r.is_done());
  CHECK(failure_as<codec::DecoderError>(r).has_value());
  CHECK_FALSE(f.ch->is_open());
  CHECK(f.pool->open_connections() == 0);
}

TEST_CASE("HttpConnectionPool: a response over max_response_body fails with TooLongFrameError") {
  HttpClientOptions o = PoolFixture::one_connection();
  o.max_response_body = 4;
  PoolFixture f(o);
  auto r = f.get("/");
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
  CHECK(failure_as<codec::TooLongFrameError>(r).has_value());
  CHECK_FALSE(f.ch->is_open());
}

TEST_CASE(
    "HttpConnectionPool: request_timeout fails an unanswered request and closes its "
    "connection, on the loop's clock") {
  HttpClientOptions o = PoolFixture::one_connection();
  o.request_timeout = 5s;
  PoolFixture f(o);
  auto r = f.get("/");
  f.sent();
  f.ch->advance_by(5s - 1ns);
  f.ch->run_pending_tasks();
  CHECK_FALSE(r.is_done());
  f.ch->advance_by(1ns);
  f.ch->run_pending_tasks();
  const auto timeout = failure_as<http::TimeoutError>(r);
  REQUIRE(timeout.has_value());
  CHECK(timeout->phase() == http::TimeoutError::Phase::kRequest);
  CHECK_FALSE(f.ch->is_open());  // its response was not read: the connection is not reused
  CHECK(failure_as<trellis::TimeoutError>(r).has_value());
}

TEST_CASE("HttpConnectionPool: pool wait timeout while the only connection stays busy") {
  HttpClientOptions o = PoolFixture::one_connection();
  o.request_timeout = 5s;
  PoolFixture f(o);
  auto first = f.get("/a");
  f.sent();
  f.ch->advance_by(4s);
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");  // slow body keeps it busy
  auto second = f.get("/b");
  CHECK(f.pool->waiting_requests() == 1);
  // first: its request timeout at 5 s closes the connection, second goes on waiting...
  f.ch->advance_by(1s);
  f.ch->run_pending_tasks();
  CHECK(failure_as<http::TimeoutError>(first)->phase() == http::TimeoutError::Phase::kRequest);
  REQUIRE(second.is_done());  // ...and its reconnect is refused (the test server is gone)
  CHECK(failure_as<ConnectError>(second).has_value());
}

TEST_CASE("HttpConnectionPool: pool wait timeout is reported as such") {
  HttpClientOptions o = PoolFixture::one_connection();
  o.request_timeout = 5s;
  o.connect_timeout = 60s;
  PoolFixture f(o);
  f.hold_connect = true;  // the connect never completes
  auto r = f.get("/");
  CHECK(f.pool->connecting() == 1);
  f.ch->advance_by(5s);
  f.ch->run_pending_tasks();
  const auto timeout = failure_as<http::TimeoutError>(r);
  REQUIRE(timeout.has_value());
  CHECK(timeout->phase() == http::TimeoutError::Phase::kPoolWait);
  CHECK(f.pool->waiting_requests() == 0);
}

TEST_CASE("HttpConnectionPool: connect_timeout fails the waiting request, on the loop's clock") {
  HttpClientOptions o = PoolFixture::one_connection();
  o.connect_timeout = 2s;
  PoolFixture f(o);
  f.hold_connect = true;
  auto r = f.get("/");
  f.ch->advance_by(2s - 1ns);
  f.ch->run_pending_tasks();
  CHECK_FALSE(r.is_done());
  f.ch->advance_by(1ns);
  f.ch->run_pending_tasks();
  const auto timeout = failure_as<http::TimeoutError>(r);
  REQUIRE(timeout.has_value());
  CHECK(timeout->phase() == http::TimeoutError::Phase::kConnect);
  CHECK(f.pool->connecting() == 0);
  // A connection that completes after the deadline is closed, not used.
  f.ch->pipeline().add_last(f.pending_init);
  f.held.set_value(std::shared_ptr<Channel>(f.ch));
  CHECK_FALSE(f.ch->is_open());
  CHECK(f.pool->open_connections() == 0);
}

TEST_CASE("HttpConnectionPool: an idle connection is closed after pool_idle_timeout") {
  HttpClientOptions o = PoolFixture::one_connection();
  o.pool_idle_timeout = 60s;
  PoolFixture f(o);
  auto r = f.get("/");
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  REQUIRE(r.is_success());
  f.ch->advance_by(30s);
  f.ch->run_pending_tasks();
  auto again = f.get("/");  // used again at 30 s: idle from 30 s on
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  REQUIRE(again.is_success());
  f.ch->advance_by(60s - 1ns);
  f.ch->run_pending_tasks();
  CHECK(f.ch->is_open());
  f.ch->advance_by(1ns);
  f.ch->run_pending_tasks();
  CHECK_FALSE(f.ch->is_open());
  CHECK(f.pool->idle_connections() == 0);
  CHECK(f.pool->open_connections() == 0);
}

TEST_CASE("HttpConnectionPool: a response nobody asked for closes the connection") {
  PoolFixture f;
  auto r = f.get("/");
  f.sent();
  f.answer(
      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  CHECK(r.is_success());
  CHECK_FALSE(f.ch->is_open());
}

TEST_CASE("HttpConnectionPool: the wait queue is bounded") {
  HttpClientOptions o = PoolFixture::one_connection();
  o.max_queued_requests_per_host = 2;
  PoolFixture f(o);
  f.hold_connect = true;
  auto a = f.get("/a");
  auto b = f.get("/b");
  auto c = f.get("/c");
  CHECK_FALSE(a.is_done());
  CHECK_FALSE(b.is_done());
  CHECK(failure_as<RejectedExecutionError>(c).has_value());
}

TEST_CASE("HttpConnectionPool: close fails waiting requests and closes the connections") {
  PoolFixture f;
  auto a = f.get("/a");
  auto b = f.get("/b");
  f.pool->close();
  f.ch->run_pending_tasks();
  CHECK(failure_as<ConnectionClosedError>(a).has_value());
  CHECK(failure_as<ClosedChannelError>(b).has_value());
  CHECK_FALSE(f.ch->is_open());
  CHECK(failure_as<ClosedChannelError>(f.get("/c")).has_value());
}

namespace {
Future<FullHttpResponse> post_expecting_continue(PoolFixture& f, std::string body) {
  FullHttpRequest request;
  request.method = HttpMethod::kPost;
  request.target = "/upload";
  request.headers.add(header::kHost, "server");
  request.headers.add("Expect", "100-continue");
  request.content = ByteBuf::from(std::move(body));
  Promise<FullHttpResponse> promise(&f.ch->event_loop());
  f.pool->submit(std::move(request), promise);
  return promise.future();
}
}  // namespace

TEST_CASE("HttpConnectionPool: Expect: 100-continue sends the body after the 100 Continue") {
  PoolFixture f;
  auto r = post_expecting_continue(f, "abc");
  CHECK(f.sent() ==
        "POST /upload HTTP/1.1\r\nHost: server\r\nExpect: 100-continue\r\n"
        "Content-Length: 3\r\n\r\n");
  f.answer("HTTP/1.1 100 Continue\r\n\r\n");
  CHECK(f.sent() == "abc");
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  REQUIRE(r.is_success());
  CHECK(r.get().status.code == 200);
  CHECK(f.pool->idle_connections() == 1);  // whole exchange: reusable
}

TEST_CASE("HttpConnectionPool: a final answer before 100 Continue: no body, connection closed") {
  PoolFixture f;
  auto r = post_expecting_continue(f, "abc");
  f.sent();
  f.answer("HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\n");
  REQUIRE(r.is_success());
  CHECK(r.get().status.code == 417);
  CHECK(f.sent().empty());
  CHECK_FALSE(f.ch->is_open());
  f.ch->advance_by(HttpClientHandler::kContinueTimeout);
  f.ch->run_pending_tasks();
  CHECK(f.sent().empty());
}

TEST_CASE("HttpConnectionPool: without an answer to 100-continue the body goes after a while") {
  PoolFixture f;
  auto r = post_expecting_continue(f, "abc");
  f.sent();
  f.ch->advance_by(HttpClientHandler::kContinueTimeout - std::chrono::nanoseconds(1));
  f.ch->run_pending_tasks();
  CHECK(f.sent().empty());
  f.ch->advance_by(std::chrono::nanoseconds(1));
  f.ch->run_pending_tasks();
  CHECK(f.sent() == "abc");
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  CHECK(r.is_success());
}

TEST_CASE("HttpConnectionPool: 204 and 304 have no body whatever their headers say") {
  PoolFixture f;
  auto a = f.get("/a");
  f.sent();
  f.answer("HTTP/1.1 204 No Content\r\n\r\n");
  REQUIRE(a.is_success());
  CHECK(a.get().status.code == 204);
  auto b = f.get("/b");
  f.sent();
  f.answer("HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n");
  REQUIRE(b.is_success());
  CHECK(b.get().content.readable_bytes() == 0);
  auto c = f.get("/c");  // the same connection, in step
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nc");
  CHECK(c.get().content.to_string() == "c");
  CHECK(f.pool->connections_made() == 1);
}
