// HttpConnectionPool and HttpClientHandler against servers that misbehave, on EmbeddedChannels:
// bytes that answer no request (never read as the next request's response), connections closed
// under the pool, stalled responses (read_timeout), abandoned connection attempts, pools left
// unused, and errors that come with a stale connection's close.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
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

namespace {

const std::string kOk2 = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
const std::string kEvil = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil";

// Two requests on a one-connection pool: the first is sent, the second waits for the connection.
struct TwoRequests {
  explicit TwoRequests(PoolFixture& f) : first(f.get("/1")), second(f.get("/2")) {
    f.fresh_channels = true;
    CHECK(f.sent() == "GET /1 HTTP/1.1\r\nHost: server\r\n\r\n");
    CHECK(f.pool->waiting_requests() == 1);
  }
  Future<FullHttpResponse> first;
  Future<FullHttpResponse> second;
};

// The second request went out on a fresh connection (the first one was closed) and is answered
// there by what the test sends on it, not by bytes of the first connection.
void check_second_on_fresh_connection(PoolFixture& f, TwoRequests& r) {
  REQUIRE(r.first.is_success());
  CHECK(r.first.get().content.to_string() == "ok");
  CHECK_FALSE(f.ch->is_open());
  CHECK_FALSE(r.second.is_done());
  REQUIRE(f.extra.size() == 1);
  EmbeddedChannel& fresh = *f.extra.front();
  CHECK(testing::drain_outbound_bytes(fresh) == "GET /2 HTTP/1.1\r\nHost: server\r\n\r\n");
  fresh.write_inbound(ByteBuf::from("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood"));
  REQUIRE(r.second.is_success());
  CHECK(r.second.get().content.to_string() == "good");
}

}  // namespace

TEST_CASE("HttpClient poisoning: a second response in the read of the first answers no request") {
  PoolFixture f;
  TwoRequests r(f);
  f.answer(kOk2 + kEvil);
  check_second_on_fresh_connection(f, r);
}

TEST_CASE("HttpClient poisoning: a body longer than its Content-Length answers no request") {
  PoolFixture f;
  TwoRequests r(f);
  f.answer(kOk2 + "HTTP/1.1 200 OK\r\nContent-Le");  // the start of a response, or junk
  check_second_on_fresh_connection(f, r);
}

TEST_CASE("HttpClient poisoning: a body on a response to HEAD is not the next response") {
  PoolFixture f;
  FullHttpRequest head;
  head.method = HttpMethod::kHead;
  head.target = "/h";
  head.headers.add(header::kHost, "server");
  Promise<FullHttpResponse> first(&f.ch->event_loop());
  f.pool->submit(std::move(head), first);
  auto second = f.get("/2");
  f.fresh_channels = true;
  CHECK(f.sent() == "HEAD /h HTTP/1.1\r\nHost: server\r\n\r\n");
  // A HEAD response has no body whatever its Content-Length; the 4 bytes after it would be the
  // start of the next response ("evil" is not one: the parser would fail or wait for more).
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n" + kEvil);
  REQUIRE(first.future().is_success());
  CHECK(first.future().get().content.readable_bytes() == 0);
  CHECK_FALSE(f.ch->is_open());
  REQUIRE(f.extra.size() == 1);
  CHECK(testing::drain_outbound_bytes(*f.extra.front()) ==
        "GET /2 HTTP/1.1\r\nHost: server\r\n\r\n");
  CHECK_FALSE(second.is_done());
}

TEST_CASE("HttpClient poisoning: bytes on an idle connection close it before it is reused") {
  SUBCASE("a whole response") {
    PoolFixture f;
    auto first = f.get("/1");
    f.sent();
    f.answer(kOk2);
    REQUIRE(first.is_success());
    CHECK(f.pool->idle_connections() == 1);
    f.answer(kEvil);  // nobody asked
    CHECK_FALSE(f.ch->is_open());
  }
  SUBCASE("the start of one, to be completed after the next request") {
    PoolFixture f;
    auto first = f.get("/1");
    f.sent();
    f.answer(kOk2);
    f.answer("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n");
    CHECK_FALSE(f.ch->is_open());
    f.fresh_channels = true;
    auto second = f.get("/2");
    REQUIRE(f.extra.size() == 1);
    f.extra.front()->write_inbound(ByteBuf::from(kOk2));
    REQUIRE(second.is_success());
    CHECK(second.get().content.to_string() == "ok");
  }
  SUBCASE("a response on a new connection before any request") {
    PoolFixture f;
    f.hold_connect = true;
    auto first = f.get("/1");
    REQUIRE(f.pending_init);
    f.ch->pipeline().add_last(std::move(f.pending_init));
    f.answer(kEvil);  // the server speaks first
    f.held.set_value(std::shared_ptr<Channel>(f.ch));
    // Not sent on the connection the response came on: it fails as not processed.
    CHECK(f.sent().empty());
    const auto e = failure_as<ConnectionClosedError>(first);
    REQUIRE(e.has_value());
    CHECK_FALSE(e->may_have_been_processed());
  }
}

TEST_CASE("HttpClient pipelining: the responses of requests in flight are not poison") {
  HttpClientOptions options = PoolFixture::one_connection();
  options.pipelining_depth = 4;
  PoolFixture f(options);
  auto a = f.get("/a");
  auto b = f.get("/b");
  f.sent();
  f.answer(kOk2 + kEvil);  // both in one read: each is the answer to its request
  REQUIRE(a.is_success());
  REQUIRE(b.is_success());
  CHECK(b.get().content.to_string() == "evil");
  CHECK(f.ch->is_open());
  CHECK(f.pool->idle_connections() == 1);
}

TEST_CASE("HttpConnectionPool: a connection closed while idle is never handed out") {
  PoolFixture f;
  auto first = f.get("/1");
  f.sent();
  f.answer(kOk2);
  REQUIRE(first.is_success());
  CHECK(f.pool->idle_connections() == 1);
  // The server closed it: the channel is inactive, its channel_inactive is still queued (a
  // socket closed at EOF runs it as a task).
  f.ch->pipeline().close();
  CHECK_FALSE(f.ch->is_active());
  f.fresh_channels = true;
  auto second = f.get("/2");
  REQUIRE(f.extra.size() == 1);
  CHECK(testing::drain_outbound_bytes(*f.extra.front()) ==
        "GET /2 HTTP/1.1\r\nHost: server\r\n\r\n");
  f.extra.front()->write_inbound(ByteBuf::from(kOk2));
  REQUIRE(second.is_success());
  f.ch->run_pending_tasks();
  CHECK(f.pool->open_connections() == 1);
}

TEST_CASE(
    "HttpConnectionPool: a request dispatched to a connection closed meanwhile waits for "
    "another") {
  PoolFixture f;
  TwoRequests r(f);
  // The response ends, and the connection is closed before its release hands it the next
  // request: the request goes back to the queue and out on a fresh connection.
  struct CloseAfterResponse : ChannelInboundHandler {
    void channel_read(ChannelHandlerContext& ctx, Message msg) override {
      ctx.channel().pipeline().close();
      ctx.fire_channel_read(std::move(msg));
    }
  };
  f.ch->pipeline().add_before("http-client", "closer", std::make_shared<CloseAfterResponse>());
  f.answer(kOk2);
  REQUIRE(r.first.is_success());
  CHECK_FALSE(r.second.is_done());
  REQUIRE(f.extra.size() == 1);
  CHECK(testing::drain_outbound_bytes(*f.extra.front()) ==
        "GET /2 HTTP/1.1\r\nHost: server\r\n\r\n");
}

namespace {
// An error fired as the connection ends, before channel_inactive (as SslHandler reports a TLS
// stream that ended without close_notify).
struct TruncationAtClose : ChannelInboundHandler {
  void channel_inactive(ChannelHandlerContext& ctx) override {
    ctx.fire_exception_caught(std::make_exception_ptr(Error("stream truncated")));
    ctx.fire_channel_inactive();
  }
};
}  // namespace

TEST_CASE("HttpConnectionPool: a stale connection whose close comes with an error is retried") {
  PoolFixture f;
  f.ch->pipeline().add_first("truncation", std::make_shared<TruncationAtClose>());
  auto first = f.get("/1");
  f.sent();
  f.answer(kOk2);
  REQUIRE(first.is_success());
  auto second = f.get("/2");
  CHECK(f.sent() == "GET /2 HTTP/1.1\r\nHost: server\r\n\r\n");
  f.fresh_channels = true;
  f.ch->close();  // no byte of an answer: the server had closed it while idle
  CHECK_FALSE(second.is_done());
  CHECK(f.pool->retries() == 1);
  REQUIRE(f.extra.size() == 1);
  CHECK(testing::drain_outbound_bytes(*f.extra.front()) ==
        "GET /2 HTTP/1.1\r\nHost: server\r\n\r\n");
  f.extra.front()->write_inbound(ByteBuf::from(kOk2));
  CHECK(second.is_success());
}

TEST_CASE("HttpClient read_timeout: a response that stops arriving fails and closes") {
  HttpClientOptions options = PoolFixture::one_connection();
  options.read_timeout = 2s;
  options.request_timeout = 1h;
  SUBCASE("before the head") {
    PoolFixture f(options);
    auto r = f.get("/");
    f.sent();
    f.ch->advance_by(1999ms);
    CHECK_FALSE(r.is_done());
    f.ch->advance_by(1ms);
    const auto e = failure_as<http::TimeoutError>(r);
    REQUIRE(e.has_value());
    CHECK(e->phase() == http::TimeoutError::Phase::kRead);
    CHECK_FALSE(f.ch->is_open());
  }
  SUBCASE("between two reads of the body; every read restarts the count") {
    PoolFixture f(options);
    auto r = f.get("/");
    f.sent();
    f.answer("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab");
    for (int i = 0; i < 5; ++i) {
      f.ch->advance_by(1500ms);
      f.answer("c");
      CHECK_FALSE(r.is_done());
    }
    f.ch->advance_by(2s);
    const auto e = failure_as<http::TimeoutError>(r);
    REQUIRE(e.has_value());
    CHECK(e->phase() == http::TimeoutError::Phase::kRead);
  }
  SUBCASE("an idle connection has no read deadline, a new request a fresh one") {
    PoolFixture f(options);
    auto first = f.get("/1");
    f.sent();
    f.ch->advance_by(1500ms);
    f.answer(kOk2);
    REQUIRE(first.is_success());
    f.ch->advance_by(10s);
    CHECK(f.ch->is_open());
    auto second = f.get("/2");
    f.ch->advance_by(1500ms);
    f.answer(kOk2);
    CHECK(second.is_success());
  }
}

TEST_CASE("HttpClient read_timeout: a streamed body that stalls fails its reader") {
  HttpClientOptions options = PoolFixture::one_connection();
  options.read_timeout = 2s;
  PoolFixture f(options);
  FullHttpRequest request;
  request.target = "/stream";
  request.headers.add(header::kHost, "server");
  Promise<StreamingHttpResponse> promise(&f.ch->event_loop());
  f.pool->submit_streaming(std::move(request), promise);
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n12345");
  REQUIRE(promise.future().is_success());
  StreamingHttpResponse response = promise.future().get();
  auto chunk = response.body().next();
  REQUIRE(chunk.is_success());
  auto stalled = response.body().next();
  f.ch->advance_by(1s);
  CHECK_FALSE(stalled.is_done());
  f.ch->advance_by(1s);
  REQUIRE(stalled.is_done());
  CHECK_FALSE(stalled.is_success());
  CHECK_THROWS_AS(stalled.get(), http::TimeoutError);
  CHECK_FALSE(f.ch->is_open());
}

TEST_CASE("HttpConnectionPool: an abandoned connection attempt is closed") {
  HttpClientOptions options = PoolFixture::one_connection();
  options.connect_timeout = 200ms;
  auto ch = std::make_shared<EmbeddedChannel>();
  ch->freeze_time();
  Promise<std::shared_ptr<Channel>> never(&ch->event_loop());  // a handshake never answered
  auto pool = std::make_shared<HttpConnectionPool>(
      ch->event_loop(), "server:443", options,
      [&](std::shared_ptr<ChannelHandler> init) -> Future<std::shared_ptr<Channel>> {
        ch->pipeline().add_last(std::move(init));
        return never.future();
      });
  SUBCASE("at its connect timeout") {
    FullHttpRequest request;
    request.target = "/";
    request.headers.add(header::kHost, "server");
    Promise<FullHttpResponse> promise(&ch->event_loop());
    pool->submit(std::move(request), promise);
    CHECK(ch->is_open());
    ch->advance_by(200ms);
    const auto e = failure_as<http::TimeoutError>(promise.future());
    REQUIRE(e.has_value());
    CHECK(e->phase() == http::TimeoutError::Phase::kConnect);
    CHECK_FALSE(ch->is_open());
  }
  SUBCASE("when the pool closes") {
    FullHttpRequest request;
    request.target = "/";
    request.headers.add(header::kHost, "server");
    Promise<FullHttpResponse> promise(&ch->event_loop());
    pool->submit(std::move(request), promise);
    pool->close();
    CHECK_FALSE(ch->is_open());
    CHECK(promise.future().is_done());
  }
  never.try_set_exception(std::make_exception_ptr(ClosedChannelError("test over")));
}

TEST_CASE("HttpConnectionPool::on_unused: called once the pool was unused for pool_idle_timeout") {
  HttpClientOptions options = PoolFixture::one_connection();
  options.pool_idle_timeout = 10s;
  // The pool on a loop of its own: closing a connection (an EmbeddedChannel, whose close cancels
  // its loop's timers) leaves the pool's timers alone.
  EmbeddedEventLoop loop;
  loop.freeze_time();
  std::shared_ptr<EmbeddedChannel> connection;
  auto pool = std::make_shared<HttpConnectionPool>(
      loop, "server:80", options,
      [&](std::shared_ptr<ChannelHandler> init) -> Future<std::shared_ptr<Channel>> {
        connection = std::make_shared<EmbeddedChannel>();
        connection->pipeline().add_last(std::move(init));
        Promise<std::shared_ptr<Channel>> connected(&loop);
        connected.set_value(std::shared_ptr<Channel>(connection));
        return connected.future();
      });
  int calls = 0;
  pool->on_unused([&calls] { ++calls; });
  FullHttpRequest request;
  request.target = "/";
  request.headers.add(header::kHost, "server");
  Promise<FullHttpResponse> promise(&loop);
  pool->submit(std::move(request), promise);
  REQUIRE(connection);
  testing::drain_outbound_bytes(*connection);
  connection->write_inbound(ByteBuf::from(kOk2));
  REQUIRE(promise.future().is_success());
  CHECK_FALSE(pool->unused());  // an idle connection is kept
  loop.advance_by(10s);         // and closed after pool_idle_timeout
  connection->run_pending_tasks();
  CHECK_FALSE(connection->is_open());
  CHECK(pool->unused());
  CHECK(calls == 0);
  loop.advance_by(9s);
  CHECK(calls == 0);
  loop.advance_by(1s);
  CHECK(calls == 1);
  // Used again, then unused again: the countdown starts over.
  Promise<FullHttpResponse> again(&loop);
  FullHttpRequest second;
  second.target = "/";
  second.headers.add(header::kHost, "server");
  pool->submit(std::move(second), again);
  testing::drain_outbound_bytes(*connection);
  connection->write_inbound(
      ByteBuf::from("HTTP/1.1 200 OK\r\nConnection: close\r\n"
                    "Content-Length: 0\r\n\r\n"));
  REQUIRE(again.future().is_success());
  connection->run_pending_tasks();
  CHECK(pool->unused());
  loop.advance_by(9s);
  CHECK(calls == 1);
  loop.advance_by(1s);
  CHECK(calls == 2);
  pool->close();
}

TEST_CASE(
    "HttpClient read_timeout: time the application holds a streamed body's chunks does not "
    "count") {
  HttpClientOptions options = PoolFixture::one_connection();
  options.read_timeout = 2s;
  PoolFixture f(options);
  FullHttpRequest request;
  request.target = "/stream";
  request.headers.add(header::kHost, "server");
  Promise<StreamingHttpResponse> promise(&f.ch->event_loop());
  f.pool->submit_streaming(std::move(request), promise);
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n");
  REQUIRE(promise.future().is_success());
  StreamingHttpResponse response = promise.future().get();
  // More chunks than the stream holds for a reader that takes none: the connection stops reading.
  for (std::size_t i = 0; i <= HttpBodyStream::kMaxBufferedChunks; ++i) f.answer("0123456789");
  REQUIRE_FALSE(f.ch->config().auto_read());
  f.ch->advance_by(10s);  // the server is not the one stalling
  CHECK(f.ch->is_open());
  auto chunk = response.body().next();
  REQUIRE(chunk.is_success());
  CHECK(chunk.get()->to_string() == "0123456789");
}
