// Tests of HttpServerCodec's connection discipline on EmbeddedChannel: responses in request order
// (errors and timeouts too), nothing processed after a request that closes the connection, the
// request read timeouts on the loop's clock, back-pressure, and the lingering close.
#include <doctest/doctest.h>

#include <string>

#include "http_server_fixture.hpp"

using namespace trellis;
using namespace trellis::http;
using namespace trellis::testing::server_fixture;
using namespace std::chrono_literals;

TEST_CASE("an error mid-pipeline goes out after the responses to the requests before it") {
  SUBCASE("answered at once") {
    Server s;
    s.send(kGet1 + kBad + kGet3);
    const auto wire = s.out();
    REQUIRE(wire.rfind(k200One, 0) == 0);
    const auto rest = wire.substr(k200One.size());
    CHECK(rest.rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
    CHECK(rest.find("Connection: close\r\n") != std::string::npos);
    CHECK(count(wire, "HTTP/1.1") == 2);  // nothing for /3
    CHECK(s.answerer->seen() == 1);
  }
  SUBCASE("answered later: the 400 waits for the earlier response") {
    Server s(short_timeouts(), /*deferred=*/true);
    s.send(kGet1 + kBad + kGet3);
    CHECK(s.out().empty());
    CHECK(s.ch.is_active());
    s.answerer->answer();
    const auto wire = s.out();
    REQUIRE(wire.rfind(k200One, 0) == 0);
    CHECK(wire.substr(k200One.size()).rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
  }
  SUBCASE("the 400 answers a request whose body went wrong, after the one before it") {
    Server s(short_timeouts(), /*deferred=*/true);
    s.send(kGet1 + "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
    s.answerer->answer();
    const auto wire = s.out();
    REQUIRE(wire.rfind(k200One, 0) == 0);
    CHECK(wire.substr(k200One.size()).rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
    CHECK(s.codec->unanswered() == 0);
  }
}

TEST_CASE("after an error the output is shut down and input drained, then the channel closes") {
  Server s;
  s.send(kBad);
  CHECK(s.out().rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
  CHECK(s.ch.is_output_shutdown());
  CHECK(s.codec->is_lingering());
  CHECK(s.ch.is_active());
  s.send(std::string(1000, 'x'));  // the client still sends: read and dropped
  CHECK(s.ch.is_active());
  SUBCASE("closed at the linger deadline on the loop's clock") {
    s.ch.advance_by(2s - kOneNs);
    CHECK(s.ch.is_active());
    s.ch.advance_by(kOneNs);
    CHECK_FALSE(s.ch.is_open());
  }
  SUBCASE("closed once 64 KiB were dropped") {
    s.send(std::string(63 * 1024, 'x'));
    CHECK(s.ch.is_active());
    s.send(std::string(1024, 'x'));
    CHECK_FALSE(s.ch.is_open());
  }
  SUBCASE("closed when the client closes its side") {
    s.ch.shutdown_input();
    CHECK_FALSE(s.ch.is_open());
  }
}

TEST_CASE("nothing after a request that closes the connection is processed") {
  SUBCASE("Connection: close") {
    Server s;
    s.send("GET /1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" + kGet3);
    const auto wire = s.out();
    CHECK(count(wire, "HTTP/1.1") == 1);
    CHECK(wire.find("Connection: close\r\n") != std::string::npos);
    CHECK(s.answerer->seen() == 1);
    // What followed was dropped: a lingering close, not a reset.
    CHECK(s.ch.is_output_shutdown());
    s.ch.advance_by(2s);
    CHECK_FALSE(s.ch.is_open());
  }
  SUBCASE("HTTP/1.0 without keep-alive") {
    Server s;
    s.send("GET /1 HTTP/1.0\r\n\r\n" + kGet3);
    CHECK(count(s.out(), "HTTP/1.") == 1);
    CHECK(s.answerer->seen() == 1);
  }
  SUBCASE("with nothing after it the connection closes at once") {
    Server s;
    s.send("GET /1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    CHECK(count(s.out(), "HTTP/1.1") == 1);
    CHECK_FALSE(s.ch.is_open());
  }
  SUBCASE("answered later, bytes after it are still not processed") {
    Server s(short_timeouts(), /*deferred=*/true);
    s.send("GET /1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    s.send(kGet3);
    CHECK(s.answerer->seen() == 1);
    CHECK_FALSE(s.ch.config().auto_read());  // reading stopped: nothing more is wanted
    s.answerer->answer();
    CHECK(count(s.out(), "HTTP/1.1") == 1);
    CHECK(s.ch.is_output_shutdown());
  }
}

TEST_CASE("a head not complete within header_timeout gets 408, exactly at the deadline") {
  Server s;
  s.ch.advance_by(5s);  // the head starts later than the connection
  s.send("GET /1 HTTP/1.1\r\nHo");
  s.ch.advance_by(20s);
  s.send("st: x\r\n");  // trickling bytes do not restart the clock
  s.ch.advance_by(10s - kOneNs);
  CHECK(s.out().empty());
  CHECK(s.ch.is_active());
  s.ch.advance_by(kOneNs);
  const auto wire = s.out();
  CHECK(wire.rfind("HTTP/1.1 408 Request Timeout\r\n", 0) == 0);
  CHECK(wire.find("Connection: close\r\n") != std::string::npos);
  CHECK(s.ch.is_output_shutdown());  // more of the head may come: lingering
}

TEST_CASE("a body read gap longer than body_timeout gets 408; each read restarts the wait") {
  Server s;
  s.send("POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab");
  s.ch.advance_by(59s);
  s.send("c");
  s.ch.advance_by(60s - kOneNs);
  CHECK(s.ch.is_active());
  CHECK(s.out().empty());
  s.ch.advance_by(kOneNs);
  CHECK(s.out().rfind("HTTP/1.1 408 Request Timeout\r\n", 0) == 0);
}

TEST_CASE("a request announced with 100-continue and no body gets 408 after body_timeout") {
  Server s;
  s.send("POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n");
  CHECK(s.out().rfind("HTTP/1.1 100 Continue\r\n", 0) == 0);
  s.ch.advance_by(60s);
  CHECK(s.out().rfind("HTTP/1.1 408 Request Timeout\r\n", 0) == 0);
}

TEST_CASE("a timeout while an earlier response is in progress answers after it") {
  Server s(short_timeouts(), /*deferred=*/true);
  s.send(kGet1 + "GET /2 HTTP/1.1\r\nHo");  // /1 is being answered, /2's head stalls
  s.ch.advance_by(30s);
  CHECK(s.out().empty());
  s.answerer->answer();
  const auto wire = s.out();
  REQUIRE(wire.rfind(k200One, 0) == 0);
  CHECK(wire.substr(k200One.size()).rfind("HTTP/1.1 408 Request Timeout\r\n", 0) == 0);
}

TEST_CASE("an idle connection closes after idle_timeout, without a response") {
  Server s;
  s.send(kGet1);
  CHECK(s.out() == k200One);
  s.ch.advance_by(59s);
  CHECK(s.ch.is_active());
  s.send(kGet3);  // a request makes it busy, its answer idle again
  s.out();
  s.ch.advance_by(60s - kOneNs);
  CHECK(s.ch.is_active());
  s.ch.advance_by(kOneNs);
  CHECK_FALSE(s.ch.is_open());
  CHECK(s.out().empty());
}

TEST_CASE("a request being answered is not idle and has no read deadline, however long") {
  Server s(short_timeouts(), /*deferred=*/true);
  s.ch.advance_by(4s);
  s.send(kGet1);
  s.ch.advance_by(10min);
  CHECK(s.ch.is_active());
  s.answerer->answer();
  s.ch.advance_by(60s - kOneNs);  // idle from the answer on
  CHECK(s.ch.is_active());
  s.ch.advance_by(kOneNs);
  CHECK_FALSE(s.ch.is_open());
}

TEST_CASE("without a channel_read_complete an answered connection still closes, never early") {
  Server s;
  s.ch.advance_by(50s);  // the timer armed at activation comes due at 30 s, then 60 s
  s.ch.pipeline().fire_channel_read(Message(ByteBuf::from(kGet1)));  // no read_complete
  s.ch.flush();
  s.out();
  s.ch.advance_by(10s);  // the check finds the idle time unstamped and counts from now
  CHECK(s.ch.is_active());
  s.ch.advance_by(60s - kOneNs);
  CHECK(s.ch.is_active());
  s.ch.advance_by(kOneNs);
  CHECK_FALSE(s.ch.is_open());
}

TEST_CASE("timeouts set to zero are off") {
  HttpServerTimeouts off;
  off.header_timeout = off.body_timeout = off.idle_timeout = off.send_timeout = 0s;
  Server s(off);
  s.send("GET /1 HTTP/1.1\r\nHo");
  s.ch.advance_by(24h);
  CHECK(s.ch.is_active());
  CHECK(s.ch.event_loop().next_scheduled_task_nanos() < 0);  // no timer at all
}

TEST_CASE("one timer per connection: requests and reads schedule nothing") {
  Server s;
  const auto armed = s.ch.event_loop().next_scheduled_task_nanos();
  REQUIRE(armed >= 0);
  for (int i = 0; i < 100; ++i) s.send(kGet1);
  s.send("POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab");
  s.send("cd");
  CHECK(s.ch.event_loop().next_scheduled_task_nanos() == armed);
  CHECK(s.ch.event_loop().scheduled_task_count() == 1);
}

TEST_CASE("an unwritable channel stops decoding and reading; writable again, all answered") {
  Server s(short_timeouts(), /*deferred=*/false, /*body_bytes=*/1000);
  s.ch.config().set_write_buffer_water_mark(512, 1024);
  s.ch.set_outbound_byte_budget(0);  // the client does not read
  std::string many;
  for (int i = 0; i < 50; ++i) many += kGet1;
  s.send(many);
  // The first response took the channel over the high water mark: nothing more is decoded,
  // and reading stopped.
  CHECK(s.answerer->seen() == 1);
  CHECK_FALSE(s.ch.is_writable());
  CHECK_FALSE(s.ch.config().auto_read());
  CHECK(s.ch.unsafe().outbound_buffer()->total_pending_write_bytes() < 1024 + 2 * 1100);
  s.ch.set_outbound_byte_budget(std::nullopt);  // the client reads everything again
  CHECK(s.answerer->seen() == 50);
  CHECK(s.ch.config().auto_read());
  CHECK(count(s.out(), "HTTP/1.1 200 OK") == 50);
}

TEST_CASE("an unwritable channel whose client never reads closes after send_timeout") {
  Server s(short_timeouts(), /*deferred=*/false, /*body_bytes=*/2000);
  s.ch.config().set_write_buffer_water_mark(512, 1024);
  s.ch.set_outbound_byte_budget(0);
  s.send(kGet1);
  REQUIRE_FALSE(s.ch.is_writable());
  s.ch.advance_by(60s - kOneNs);
  CHECK(s.ch.is_active());
  s.ch.advance_by(kOneNs);
  CHECK_FALSE(s.ch.is_open());
}

TEST_CASE("a body refused with 413 before it is read is drained by a lingering close") {
  Server s;
  s.send("POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + std::string(100, 'b'));
  CHECK(s.out().rfind("HTTP/1.1 413 ", 0) == 0);
  CHECK(s.ch.is_output_shutdown());
  s.send(std::string(4000, 'b'));  // the rest of the body still arrives: no reset
  CHECK(s.ch.is_active());
  s.ch.advance_by(2s);
  CHECK_FALSE(s.ch.is_open());
}

TEST_CASE("a body refused with 413 is answered after the responses to the requests before it") {
  Server s(short_timeouts(), /*deferred=*/true);
  s.send(kGet1 + "POST /2 HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n");
  CHECK(s.out().empty());  // /1 is not answered yet: the 413 waits for it
  CHECK(s.ch.is_active());
  s.answerer->answer();
  const std::string wire = s.out();
  CHECK(wire.rfind(k200One, 0) == 0);
  CHECK(wire.find("HTTP/1.1 413 ", k200One.size()) == k200One.size());
  CHECK(count(wire, "HTTP/1.1 ") == 2);
  CHECK(s.ch.is_output_shutdown());
}

TEST_CASE("requests read after a refused one are not passed on, and only the refusal answers") {
  // Without back-pressure the decoder reads every request of a read before any is passed on:
  // /3 is decoded before /2 is refused.
  bool pause = true;
  SUBCASE("with back-pressure (one request decoded at a time)") { pause = true; }
  SUBCASE("without back-pressure") { pause = false; }
  Server s(short_timeouts(), /*deferred=*/true, /*body_bytes=*/0, pause);
  // One read: /1, then /2 with an expectation the server refuses (417), then /3.
  s.send(kGet1 + "GET /2 HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n" + kGet3);
  CHECK(s.answerer->seen() == 1);  // /3 came after the refusal: never processed
  CHECK(s.out().empty());
  s.answerer->answer();
  const std::string wire = s.out();
  CHECK(wire.rfind(k200One, 0) == 0);
  CHECK(wire.find("HTTP/1.1 417 Expectation Failed\r\n", k200One.size()) == k200One.size());
  CHECK(wire.find("Connection: close\r\n") != std::string::npos);
  CHECK(count(wire, "HTTP/1.1 ") == 2);
  CHECK(s.answerer->seen() == 1);
  CHECK(s.ch.is_output_shutdown());
}

TEST_CASE("a refusal with nothing before it is answered at once; its promise completes on close") {
  Server s;
  s.send("POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n");  // the body is still due
  auto promise = s.ch.pipeline().context(*s.answerer)->new_promise();
  s.ch.pipeline().context(*s.answerer)->write_and_flush(Message(HttpRefusal{429}), promise);
  const std::string wire = s.out();
  CHECK(wire.rfind("HTTP/1.1 429 Too Many Requests\r\n", 0) == 0);
  CHECK(wire.find("\r\n\r\nToo Many Requests\n") != std::string::npos);
  CHECK(s.ch.is_output_shutdown());
  CHECK_FALSE(promise.future().is_done());  // the connection lingers: not closed yet
  s.ch.advance_by(2s);
  CHECK_FALSE(s.ch.is_open());
  CHECK(promise.future().is_success());
}

TEST_CASE("a second refusal, or one after a decode error, changes nothing") {
  Server s(short_timeouts(), /*deferred=*/true);
  s.send(kGet1 + kBad);  // the 400 waits for /1
  auto* last = s.ch.pipeline().context(*s.answerer);
  last->write_and_flush(Message(HttpRefusal{413}));
  s.answerer->answer();
  const std::string wire = s.out();
  CHECK(wire.rfind(k200One, 0) == 0);
  CHECK(wire.find("HTTP/1.1 400 Bad Request\r\n") == k200One.size());
  CHECK(count(wire, "HTTP/1.1 ") == 2);
}

TEST_CASE("a 100 Continue waits for the responses to the requests before its own") {
  Server s(short_timeouts(), /*deferred=*/true);
  s.send(kGet1 +
         "POST /2 HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  // A 100 now would read, to the client, as an interim answer to /1.
  CHECK(s.out().empty());
  s.answerer->answer();
  std::string wire = s.out();
  CHECK(wire == k200One + "HTTP/1.1 100 Continue\r\n\r\n");
  s.send("/2");  // the body, invited
  s.answerer->answer();
  wire = s.out();
  CHECK(wire == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n/2");
  CHECK(s.ch.is_active());
}

TEST_CASE("a 100 Continue with nothing before it goes at once") {
  Server s;
  s.send("POST /1 HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  CHECK(s.out() == "HTTP/1.1 100 Continue\r\n\r\n");
  s.send("ab");
  CHECK(s.out() == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n/1");
}

TEST_CASE("an interim response still held when the connection closes fails its write") {
  Server s(short_timeouts(), /*deferred=*/true);
  s.send(kGet1 + "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n");
  auto* ctx = s.ch.pipeline().context(*s.answerer);
  HttpResponse early_hints;
  early_hints.status.code = 103;
  auto promise = ctx->new_promise();
  ctx->write(Message(std::move(early_hints)));
  ctx->write_and_flush(Message(LastHttpContent{}), promise);
  CHECK(s.out().empty());  // /1 first
  CHECK_FALSE(promise.future().is_done());
  s.ch.close();
  REQUIRE(promise.future().is_done());
  CHECK_FALSE(promise.future().is_success());
}

namespace {
// Answers every request at once; the answer to /1 says Connection: close.
class ClosingAnswerer final : public SimpleChannelInboundHandler<FullHttpRequest> {
 public:
  std::vector<std::string> seen;

 protected:
  void channel_read0(ChannelHandlerContext& ctx, FullHttpRequest& request) override {
    seen.push_back(request.target);
    FullHttpResponse response;
    if (request.target == "/1") response.headers.add(HeaderId::kConnection, "close");
    response.content = ByteBuf::from(request.target);
    ctx.write_and_flush(Message(std::move(response)));
  }
};
}  // namespace

TEST_CASE("nothing after a response that closes the connection is processed") {
  bool pause = true;
  SUBCASE("with back-pressure (one request decoded at a time)") { pause = true; }
  SUBCASE("without back-pressure") { pause = false; }
  HttpRequestDecoderOptions options = Server::decoder_options(pause);
  auto app = std::make_shared<ClosingAnswerer>();
  EmbeddedChannel ch(
      std::make_shared<HttpServerCodec>(HttpParserLimits{}, Server::encoder_options(), options),
      std::make_shared<HttpServerKeepAliveHandler>(), std::make_shared<HttpObjectAggregator>(1024),
      app);
  ch.write_inbound(ByteBuf::from(kGet1 + kGet3));
  ch.run_pending_tasks();
  CHECK(app->seen == std::vector<std::string>{"/1"});
  const std::string wire = testing::drain_outbound_bytes(ch);
  CHECK(count(wire, "HTTP/1.1 ") == 1);
  CHECK(wire.find("Connection: close\r\n") != std::string::npos);
  // Closed at once, or (bytes of /3 unread) after a lingering close.
  CHECK((ch.is_output_shutdown() || !ch.is_open()));
  ch.advance_by(2s);
  CHECK_FALSE(ch.is_open());
}

TEST_CASE("the codec closes after a response that says Connection: close, without keep-alive") {
  auto app = std::make_shared<ClosingAnswerer>();
  EmbeddedChannel ch(
      std::make_shared<HttpServerCodec>(HttpParserLimits{}, Server::encoder_options(),
                                        Server::decoder_options(true)),
      std::make_shared<HttpObjectAggregator>(1024), app);
  ch.write_inbound(ByteBuf::from(kGet1));
  ch.run_pending_tasks();
  CHECK(testing::drain_outbound_bytes(ch).find("Connection: close\r\n") != std::string::npos);
  CHECK_FALSE(ch.is_open());
}

TEST_CASE("an application answering later gets at most max_unanswered_requests at once") {
  bool pause = true;
  SUBCASE("with back-pressure") { pause = true; }
  SUBCASE("without back-pressure") { pause = false; }
  Server s(short_timeouts(), /*deferred=*/true, /*body_bytes=*/0, pause);
  REQUIRE(HttpRequestDecoderOptions{}.max_unanswered_requests == 16);
  std::string batch;
  for (int i = 0; i < 50; ++i)
    batch += "GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n";
  s.send(batch);
  CHECK(s.answerer->seen() == 16);  // the rest waits in the read buffer, not in the application
  CHECK_FALSE(s.ch.config().auto_read());  // and nothing more is read meanwhile
  s.answerer->answer();                    // one answer lets one more request in
  CHECK(s.answerer->seen() == 17);
  s.answerer->answer(3);
  CHECK(s.answerer->seen() == 20);
  while (s.answerer->seen() < 50 || s.codec->unanswered() > 0) {
    const std::size_t before = s.codec->unanswered();
    s.answerer->answer(before);
    REQUIRE(before > 0);
  }
  CHECK(s.answerer->seen() == 50);
  const std::string wire = s.out();
  CHECK(count(wire, "HTTP/1.1 200 OK") == 50);
  std::size_t at = 0;
  for (int i = 0; i < 50; ++i) {  // in request order
    const std::string body = "\r\n\r\n/" + std::to_string(i);
    const auto found = wire.find(body, at);
    REQUIRE(found != std::string::npos);
    at = found + body.size();
  }
  CHECK(s.ch.config().auto_read());  // reading again
  CHECK(s.ch.is_active());
}

TEST_CASE("an application that answers at once is never held back by max_unanswered_requests") {
  Server s(short_timeouts(), /*deferred=*/false, /*body_bytes=*/0, /*pause=*/false);
  std::string batch;
  for (int i = 0; i < 40; ++i)
    batch += "GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n";
  s.send(batch);
  CHECK(s.answerer->seen() == 40);
  CHECK(count(s.out(), "HTTP/1.1 200 OK") == 40);
  CHECK(s.ch.config().auto_read());
}
