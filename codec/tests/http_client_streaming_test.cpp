// Streaming responses through HttpConnectionPool on an EmbeddedChannel: the head completes the
// request, the body arrives chunk by chunk, the connection stops reading while the reader lags
// (auto_read off), returns to the pool only at the end of the body, and is closed when the
// response is dropped early.
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "http_pool_fixture.hpp"

using namespace trellis;
using namespace trellis::http;
using trellis::testing::PoolFixture;

namespace {

Future<StreamingHttpResponse> get_streaming(PoolFixture& f, std::string target) {
  FullHttpRequest request;
  request.target = std::move(target);
  request.headers.add(header::kHost, "server");
  Promise<StreamingHttpResponse> promise(&f.ch->event_loop());
  f.pool->submit_streaming(std::move(request), promise);
  return promise.future();
}

// The next chunk as text ("<end>" at the end); the future must be complete.
std::string take(HttpResponseBody& body) {
  auto next = body.next();
  REQUIRE(next.is_done());
  std::optional<ByteBuf> chunk = std::move(next).get();
  return chunk ? chunk->to_string() : "<end>";
}

std::string chunk(const std::string& text) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx", text.size());
  return std::string(size) + "\r\n" + text + "\r\n";
}

}  // namespace

TEST_CASE("Streaming response: the head comes first, then the body chunk by chunk") {
  PoolFixture f;
  auto head = get_streaming(f, "/stream");
  CHECK(f.sent() == "GET /stream HTTP/1.1\r\nHost: server\r\n\r\n");
  CHECK_FALSE(head.is_done());
  f.answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: b\r\n\r\n");
  REQUIRE(head.is_success());
  StreamingHttpResponse response = std::move(head).get();
  CHECK(response.status.code == 200);
  CHECK(response.headers.get("X-A") == std::optional<std::string_view>("b"));

  auto pending = response.body().next();
  CHECK_FALSE(pending.is_done());  // nothing yet: the reader waits
  f.answer(chunk("one"));
  REQUIRE(pending.is_success());
  CHECK(std::move(pending).get()->to_string() == "one");
  f.answer(chunk("two") + chunk("three"));
  CHECK(take(response.body()) == "two");
  CHECK(take(response.body()) == "three");
  CHECK(f.pool->idle_connections() == 0);  // the body is not over: the connection is not free
  f.answer("0\r\n\r\n");
  CHECK(take(response.body()) == "<end>");
  CHECK(take(response.body()) == "<end>");
  CHECK(f.pool->idle_connections() == 1);
  CHECK(f.ch->is_open());
}

TEST_CASE("Streaming response: a reader that lags stops the connection reading") {
  PoolFixture f;
  auto head = get_streaming(f, "/");
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
  StreamingHttpResponse response = std::move(head).get();
  // Each answer() is one read: kMaxBufferedChunks untaken chunks turn auto_read off.
  for (std::size_t i = 0; i < HttpBodyStream::kMaxBufferedChunks; ++i) {
    CHECK(f.ch->config().auto_read());
    f.answer(chunk("c" + std::to_string(i)));
  }
  CHECK_FALSE(f.ch->config().auto_read());
  f.answer(chunk("held") + "0\r\n\r\n");
  CHECK(f.ch->pending_inbound_messages().size() == 1);  // not read while the reader lags
  CHECK(take(response.body()) == "c0");                 // one taken: reading goes on
  CHECK(f.ch->config().auto_read());
  CHECK(f.ch->pending_inbound_messages().empty());
  for (int i = 1; i < 4; ++i) CHECK(take(response.body()) == "c" + std::to_string(i));
  CHECK(take(response.body()) == "held");
  CHECK(take(response.body()) == "<end>");
  CHECK(f.pool->idle_connections() == 1);
}

TEST_CASE("Streaming response: dropping it before the end closes the connection") {
  PoolFixture f;
  {
    auto head = get_streaming(f, "/");
    f.sent();
    f.answer("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome of it");
    StreamingHttpResponse response = std::move(head).get();
    CHECK(take(response.body()) == "some of it");
  }
  f.ch->run_pending_tasks();
  CHECK_FALSE(f.ch->is_open());
  CHECK(f.pool->open_connections() == 0);
}

TEST_CASE("Streaming response: dropped after the whole body arrived, the connection is reused") {
  PoolFixture f;
  {
    auto head = get_streaming(f, "/");
    f.sent();
    f.answer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    StreamingHttpResponse response = std::move(head).get();
  }  // not read: the body was all there, the connection was free already
  f.ch->run_pending_tasks();
  CHECK(f.ch->is_open());
  CHECK(f.pool->idle_connections() == 1);
  auto next = f.get("/again");
  CHECK(f.sent() == "GET /again HTTP/1.1\r\nHost: server\r\n\r\n");
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  REQUIRE(next.is_success());
  CHECK(next.get().content.to_string() == "ok");
  CHECK(f.connects == 1);
}

TEST_CASE("Streaming response: a close mid-body ends the body with ConnectionClosedError") {
  PoolFixture f;
  auto head = get_streaming(f, "/");
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc");
  StreamingHttpResponse response = std::move(head).get();
  f.ch->close();
  CHECK(take(response.body()) == "abc");  // what arrived is still read
  auto failed = response.body().next();
  REQUIRE(failed.is_done());
  CHECK_FALSE(failed.is_success());
  CHECK_THROWS_AS(std::rethrow_exception(failed.cause()), ConnectionClosedError);
}

TEST_CASE("Streaming response: interim responses are skipped, a whole request follows") {
  PoolFixture f;
  auto head = get_streaming(f, "/");
  f.sent();
  f.answer("HTTP/1.1 103 Early Hints\r\nLink: </s>\r\n\r\n");
  CHECK_FALSE(head.is_done());
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc");
  StreamingHttpResponse response = std::move(head).get();
  CHECK(take(response.body()) == "abc");
  CHECK(take(response.body()) == "<end>");
  // The next (aggregated) request on the same connection gets a whole response.
  auto whole = f.get("/b");
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk("x") + chunk("y") +
           "0\r\n\r\n");
  REQUIRE(whole.is_success());
  CHECK(whole.get().content.to_string() == "xy");
}

TEST_CASE("Streaming response: request_timeout ends with the head") {
  HttpClientOptions o = PoolFixture::one_connection();
  o.request_timeout = std::chrono::seconds(5);
  PoolFixture f(o);
  auto head = get_streaming(f, "/");
  f.sent();
  f.answer("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n");
  StreamingHttpResponse response = std::move(head).get();
  f.ch->advance_by(std::chrono::seconds(10));
  f.ch->run_pending_tasks();
  CHECK(f.ch->is_open());
  f.answer("0123456789");
  CHECK(take(response.body()) == "0123456789");
  CHECK(take(response.body()) == "<end>");
}
