#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/codec/http/http_date.hpp>
#include <trellis/codec/http/http_object_aggregator.hpp>
#include <trellis/codec/http/http_response_encoder.hpp>
#include <trellis/codec/http/http_server_expect_continue_handler.hpp>
#include <trellis/codec/http/http_server_keep_alive_handler.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/testing.hpp>
#include <trellis/testing/doctest_helpers.hpp>

using namespace trellis;
using namespace trellis::http;
using namespace std::chrono_literals;

namespace {
FullHttpResponse hello() {
  FullHttpResponse r;
  r.headers.add(header::kContentType, "text/plain");
  r.content = ByteBuf::from("Hello, World!");
  return r;
}

HttpRequest get(std::string target, HttpVersion v = kHttp11) {
  HttpRequest r;
  r.method = HttpMethod::kGet;
  r.target = std::move(target);
  r.version = v;
  r.headers.add(header::kHost, "h");
  return r;
}
}  // namespace

TEST_CASE("a full response with a small body is encoded in one buffer, with a length") {
  HttpResponseEncoder::Options options;
  options.add_date_header = false;
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(options)};
  ch.write_outbound(hello());
  auto wire = ch.read_outbound<ByteBuf>();
  REQUIRE(wire);
  CHECK(wire->to_string() ==
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\n"
        "Hello, World!");
  CHECK_FALSE(ch.read_outbound<ByteBuf>());
  CHECK_FALSE(ch.finish());
}

TEST_CASE("a full response with a larger body is encoded as a head and the uncopied body") {
  HttpResponseEncoder::Options options;
  options.add_date_header = false;
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(options)};
  const std::string text(kCopyBodyThreshold + 1, 'b');
  FullHttpResponse response;
  response.content = ByteBuf::from(text);
  const auto* body_bytes = response.content.readable_span().data();
  ch.write_outbound(std::move(response));
  auto head = ch.read_outbound<ByteBuf>();
  auto body = ch.read_outbound<ByteBuf>();
  REQUIRE(head);
  REQUIRE(body);
  CHECK(head->to_string() == "HTTP/1.1 200 OK\r\nContent-Length: 129\r\n\r\n");
  CHECK(body->readable_span().data() == body_bytes);  // the body itself: no copy
  CHECK(body->to_string() == text);
  CHECK_FALSE(ch.finish());
}

TEST_CASE("a body of exactly the copy threshold is copied; a custom status keeps its reason") {
  HttpResponseEncoder::Options options;
  options.add_date_header = false;
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(options)};
  FullHttpResponse response;
  response.status = {299, "Fine"};
  response.headers.add("X-A", "1");
  response.content = ByteBuf::from(std::string(kCopyBodyThreshold, 'c'));
  ch.write_outbound(std::move(response));
  auto wire = ch.read_outbound<ByteBuf>();
  REQUIRE(wire);
  CHECK(wire->to_string() == "HTTP/1.1 299 Fine\r\nX-A: 1\r\nContent-Length: 128\r\n\r\n" +
                                 std::string(kCopyBodyThreshold, 'c'));
  CHECK_FALSE(ch.read_outbound<ByteBuf>());
  CHECK_FALSE(ch.finish());
}

TEST_CASE("the encoder adds a Date header from the per-thread cache") {
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>()};
  ch.write_outbound(hello());
  auto wire = testing::drain_outbound_bytes(ch);
  CHECK(wire.find("\r\nDate: ") != std::string::npos);
  CHECK(wire.find(" GMT\r\n") != std::string::npos);
}

TEST_CASE("streamed responses are chunked when the head says so") {
  HttpResponseEncoder::Options options;
  options.add_date_header = false;
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(options)};
  HttpResponse head;
  head.headers.add(header::kTransferEncoding, "chunked");
  ch.write_outbound(std::move(head), HttpContent{ByteBuf::from("abc")},
                    LastHttpContent{ByteBuf::from("defghijklmnopqrs"), {}});
  CHECK(testing::drain_outbound_bytes(ch) ==
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
        "chunked\r\n\r\n3\r\nabc\r\n10\r\ndefghijklmnopqrs\r\n0\r\n\r\n");
}

TEST_CASE("responses without a body never get one: 204, 304, 1xx and answers to HEAD") {
  HttpResponseEncoder::Options options;
  options.add_date_header = false;
  auto encoder = std::make_shared<HttpResponseEncoder>(options);
  EmbeddedChannel ch{encoder};
  auto r = hello();
  r.status.code = 204;
  ch.write_outbound(std::move(r));
  CHECK(testing::drain_outbound_bytes(ch) ==
        "HTTP/1.1 204 No Content\r\nContent-Type: text/plain\r\n\r\n");
  encoder->on_request_method(HttpMethod::kHead);
  auto h = hello();
  h.headers.add(header::kContentLength, "13");
  ch.write_outbound(std::move(h));
  CHECK(testing::drain_outbound_bytes(ch) ==
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\n");
}

TEST_CASE("header values with CR or LF are refused (no response splitting)") {
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>()};
  auto r = hello();
  r.headers.add("X-Evil", "a\r\nSet-Cookie: x");
  auto done = ch.new_promise();
  ch.write(Message(std::move(r)), done);
  ch.flush();
  CHECK(done.is_done());
  CHECK_FALSE(done.is_success());
  CHECK(testing::drain_outbound_bytes(ch).empty());
}

TEST_CASE("the aggregator joins a head and its pieces without copying a single piece") {
  EmbeddedChannel ch{std::make_shared<HttpObjectAggregator>(1024)};
  auto req = get("/up");
  req.method = HttpMethod::kPost;
  ch.write_inbound(std::move(req), HttpContent{ByteBuf::from("abc")},
                   LastHttpContent{ByteBuf::from("def"), {}});
  auto full = ch.read_inbound<FullHttpRequest>();
  REQUIRE(full);
  CHECK(full->target == "/up");
  CHECK(full->content.to_string() == "abcdef");
  ch.write_inbound(get("/one"), LastHttpContent{ByteBuf::from("x"), {}});
  auto one = ch.read_inbound<FullHttpRequest>();
  REQUIRE(one);
  CHECK(one->content.to_string() == "x");
}

TEST_CASE("the aggregator keeps no receive buffer of a body that came in many small pieces") {
  // Each piece is one byte sliced from its own 64 KiB buffer, as one-byte chunks or one byte per
  // segment arrive from the socket. Holding the slices would pin 64 KiB per body byte.
  constexpr std::size_t kPieces = 100;
  EmbeddedChannel ch{std::make_shared<HttpObjectAggregator>(1024)};
  auto req = get("/up");
  req.method = HttpMethod::kPost;
  req.headers.add(header::kTransferEncoding, "chunked");
  ch.write_inbound(std::move(req));
  std::vector<ByteBuf> reads;
  for (std::size_t i = 0; i < kPieces; ++i) {
    ByteBuf read = ByteBuf::from(std::string(64 * 1024, static_cast<char>('a' + i % 26)));
    HttpContent piece{read.slice(0, 1)};
    reads.push_back(std::move(read));
    ch.write_inbound(std::move(piece));
    // Only the piece that arrived last may still be held as it came.
    for (std::size_t j = 0; j + 1 < reads.size(); ++j) REQUIRE(reads[j].ref_count() == 1);
  }
  ch.write_inbound(LastHttpContent{});
  auto full = ch.read_inbound<FullHttpRequest>();
  REQUIRE(full);
  std::string expected;
  for (std::size_t i = 0; i < kPieces; ++i) expected += static_cast<char>('a' + i % 26);
  CHECK(full->content.to_string() == expected);
  CHECK(full->content.capacity() <= 2 * expected.size());
  for (auto& read : reads) CHECK(read.ref_count() == 1);
}

TEST_CASE("the aggregator sizes the copy of a body in pieces for its announced length") {
  EmbeddedChannel ch{std::make_shared<HttpObjectAggregator>(1 << 20)};
  auto req = get("/up");
  req.method = HttpMethod::kPost;
  req.headers.add(header::kContentLength, "10000");
  ch.write_inbound(std::move(req));
  for (int i = 0; i < 9; ++i) ch.write_inbound(HttpContent{ByteBuf::from(std::string(1000, 'x'))});
  ch.write_inbound(LastHttpContent{ByteBuf::from(std::string(1000, 'y')), {}});
  auto full = ch.read_inbound<FullHttpRequest>();
  REQUIRE(full);
  CHECK(full->content.readable_bytes() == 10000);
  CHECK(full->content.capacity() == 10000);  // one buffer of the announced size, never regrown
  CHECK(full->content.to_string().substr(8990, 20) == std::string(10, 'x') + std::string(10, 'y'));
}

TEST_CASE("an oversized request is answered with 413 and the connection closes") {
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(),
                     std::make_shared<HttpObjectAggregator>(4)};
  auto req = get("/big");
  ch.write_inbound(std::move(req), HttpContent{ByteBuf::from("abc")},
                   LastHttpContent{ByteBuf::from("def"), {}});
  CHECK_FALSE(ch.read_inbound<Message>());
  auto wire = testing::drain_outbound_bytes(ch);
  CHECK(wire.rfind("HTTP/1.1 413 Content Too Large\r\n", 0) == 0);
  CHECK(wire.find("Connection: close") != std::string::npos);
  ch.run_pending_tasks();
  CHECK_FALSE(ch.is_active());
}

TEST_CASE("keep-alive: HTTP/1.1 persists, Connection: close and HTTP/1.0 close after the answer") {
  HttpResponseEncoder::Options options;
  options.add_date_header = false;
  SUBCASE("HTTP/1.1 persists") {
    EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(options),
                       std::make_shared<HttpServerKeepAliveHandler>()};
    ch.write_inbound(get("/"));
    ch.write_outbound(hello());
    ch.run_pending_tasks();
    CHECK(ch.is_active());
    CHECK(testing::drain_outbound_bytes(ch).find("Connection") == std::string::npos);
  }
  SUBCASE("Connection: close") {
    EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(options),
                       std::make_shared<HttpServerKeepAliveHandler>()};
    auto req = get("/");
    req.headers.add(header::kConnection, "close");
    ch.write_inbound(std::move(req));
    ch.write_outbound(hello());
    ch.run_pending_tasks();
    CHECK(testing::drain_outbound_bytes(ch).find("Connection: close\r\n") != std::string::npos);
    CHECK_FALSE(ch.is_active());
  }
  SUBCASE("HTTP/1.0 without keep-alive closes; with it persists and says so") {
    EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(options),
                       std::make_shared<HttpServerKeepAliveHandler>()};
    auto ka = get("/", kHttp10);
    ka.headers.add(header::kConnection, "keep-alive");
    ch.write_inbound(std::move(ka));
    ch.write_outbound(hello());
    ch.run_pending_tasks();
    CHECK(ch.is_active());
    CHECK(testing::drain_outbound_bytes(ch).find("Connection: keep-alive\r\n") !=
          std::string::npos);
    ch.write_inbound(get("/", kHttp10));
    ch.write_outbound(hello());
    ch.run_pending_tasks();
    CHECK_FALSE(ch.is_active());
  }
}

TEST_CASE("keep-alive follows each pipelined request in order") {
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(),
                     std::make_shared<HttpServerKeepAliveHandler>()};
  auto second = get("/2");
  second.headers.add(header::kConnection, "close");
  ch.write_inbound(get("/1"), std::move(second));
  ch.write_outbound(hello());
  ch.run_pending_tasks();
  CHECK(ch.is_active());
  CHECK(testing::drain_outbound_bytes(ch).find("Connection: close") == std::string::npos);
  ch.write_outbound(hello());
  ch.run_pending_tasks();
  CHECK_FALSE(ch.is_active());
}

TEST_CASE("Expect: 100-continue gets an interim 100 before the body is read") {
  HttpResponseEncoder::Options options;
  options.add_date_header = false;
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(options),
                     std::make_shared<HttpServerKeepAliveHandler>(),
                     std::make_shared<HttpServerExpectContinueHandler>()};
  auto req = get("/upload");
  req.headers.add(header::kExpect, "100-continue");
  ch.write_inbound(std::move(req));
  CHECK(testing::drain_outbound_bytes(ch) == "HTTP/1.1 100 Continue\r\n\r\n");
  auto passed = ch.read_inbound<HttpRequest>();
  REQUIRE(passed);
  CHECK_FALSE(passed->headers.contains(HeaderId::kExpect));
  ch.write_outbound(hello());  // the final answer: the connection stays open
  ch.run_pending_tasks();
  CHECK(ch.is_active());
}

TEST_CASE("an unknown expectation is refused with 417 and the request dropped") {
  HttpResponseEncoder::Options options;
  options.add_date_header = false;
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(options),
                     std::make_shared<HttpServerExpectContinueHandler>()};
  auto req = get("/upload");
  req.headers.add(header::kExpect, "teapot");
  ch.write_inbound(std::move(req), LastHttpContent{ByteBuf::from("body"), {}});
  CHECK_FALSE(ch.read_inbound<Message>());
  CHECK(testing::drain_outbound_bytes(ch).rfind("HTTP/1.1 417 Expectation Failed\r\n", 0) == 0);
  ch.run_pending_tasks();
  CHECK_FALSE(ch.is_active());
}

namespace {
// An aggregator behind an encoder (no Date), as a server pipeline without an expect-continue
// handler has it.
struct AggregatingServer {
  EmbeddedChannel ch;
  explicit AggregatingServer(std::size_t max = 16)
      : ch{std::make_shared<HttpResponseEncoder>(no_date()),
           std::make_shared<HttpObjectAggregator>(max)} {}
  static HttpResponseEncoder::Options no_date() {
    HttpResponseEncoder::Options options;
    options.add_date_header = false;
    return options;
  }
};

HttpRequest upload(std::string expect, std::size_t length, HttpVersion v = kHttp11) {
  auto req = get("/upload", v);
  req.method = HttpMethod::kPost;
  if (!expect.empty()) req.headers.add(header::kExpect, expect);
  req.headers.add(header::kContentLength, std::to_string(length));
  return req;
}

// A bodiless request as the decoder makes it with full_bodiless_requests.
FullHttpRequest whole_get_expecting(std::string expect) {
  FullHttpRequest full;
  full.method = HttpMethod::kGet;
  full.target = "/";
  full.headers.add(header::kHost, "h");
  full.headers.add(header::kExpect, expect);
  return full;
}
}  // namespace

TEST_CASE("the aggregator answers 100-continue itself and aggregates the body that follows") {
  AggregatingServer server;
  server.ch.write_inbound(upload("100-Continue", 5));
  CHECK(testing::drain_outbound_bytes(server.ch) == "HTTP/1.1 100 Continue\r\n\r\n");
  CHECK_FALSE(server.ch.read_inbound<Message>());
  server.ch.write_inbound(LastHttpContent{ByteBuf::from("hello"), {}});
  auto full = server.ch.read_inbound<FullHttpRequest>();
  REQUIRE(full);
  CHECK(full->content.to_string() == "hello");
  CHECK_FALSE(full->headers.contains(HeaderId::kExpect));  // answered: not for the application
  CHECK(server.ch.is_active());
}

TEST_CASE("the aggregator refuses 100-continue with 413 when the announced body is too big") {
  AggregatingServer server(4);
  // The body sent anyway (with the head, before the refusal closes) is dropped.
  server.ch.write_inbound(upload("100-continue", 5), LastHttpContent{ByteBuf::from("hello"), {}});
  const auto wire = testing::drain_outbound_bytes(server.ch);
  CHECK(wire.rfind("HTTP/1.1 413 Content Too Large\r\n", 0) == 0);  // and no 100 before it
  CHECK(wire.find("Connection: close") != std::string::npos);
  CHECK_FALSE(server.ch.read_inbound<Message>());
  server.ch.run_pending_tasks();
  CHECK_FALSE(server.ch.is_active());
}

TEST_CASE("the aggregator refuses an unknown expectation with 417 and drops the request") {
  AggregatingServer server;
  server.ch.write_inbound(upload("teapot", 4), LastHttpContent{ByteBuf::from("body"), {}});
  CHECK_FALSE(server.ch.read_inbound<Message>());
  CHECK(testing::drain_outbound_bytes(server.ch).rfind("HTTP/1.1 417 Expectation Failed\r\n", 0) ==
        0);
  server.ch.run_pending_tasks();
  CHECK_FALSE(server.ch.is_active());
}

TEST_CASE("the aggregator ignores an HTTP/1.0 expectation and drops the field") {
  AggregatingServer server;
  server.ch.write_inbound(upload("100-continue", 2, kHttp10),
                          LastHttpContent{ByteBuf::from("hi"), {}});
  CHECK(testing::drain_outbound_bytes(server.ch).empty());
  auto full = server.ch.read_inbound<FullHttpRequest>();
  REQUIRE(full);
  CHECK(full->content.to_string() == "hi");
  CHECK_FALSE(full->headers.contains(HeaderId::kExpect));
}

TEST_CASE("the aggregator refuses a body announced over the limit before reading any of it") {
  AggregatingServer server(4);
  server.ch.write_inbound(upload("", 5));  // the head alone: refused before a byte of body
  const auto wire = testing::drain_outbound_bytes(server.ch);
  CHECK(wire.rfind("HTTP/1.1 413 Content Too Large\r\n", 0) == 0);
  CHECK_FALSE(server.ch.read_inbound<Message>());
  server.ch.run_pending_tasks();
  CHECK_FALSE(server.ch.is_active());
}

TEST_CASE("the aggregator reads an announced length given as a list of equal values") {
  // RFC 9110 §8.6 lets a recipient accept "5, 5" (the parser does): the limit applies to it.
  AggregatingServer server(4);
  auto req = upload("100-continue", 5);
  req.headers.set(header::kContentLength, "5 , 5");
  server.ch.write_inbound(std::move(req));
  CHECK(testing::drain_outbound_bytes(server.ch).rfind("HTTP/1.1 413 Content Too Large\r\n", 0) ==
        0);
}

TEST_CASE("the aggregator answers the expectation of an already whole request") {
  AggregatingServer server;
  server.ch.write_inbound(whole_get_expecting("100-continue"));
  CHECK(testing::drain_outbound_bytes(server.ch) == "HTTP/1.1 100 Continue\r\n\r\n");
  auto passed = server.ch.read_inbound<FullHttpRequest>();
  REQUIRE(passed);
  CHECK_FALSE(passed->headers.contains(HeaderId::kExpect));
  server.ch.write_inbound(whole_get_expecting("teapot"));
  CHECK_FALSE(server.ch.read_inbound<Message>());
  CHECK(testing::drain_outbound_bytes(server.ch).rfind("HTTP/1.1 417 Expectation Failed\r\n", 0) ==
        0);
}

TEST_CASE("behind an expect-continue handler the aggregator sees no expectation: one 100 only") {
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(AggregatingServer::no_date()),
                     std::make_shared<HttpServerExpectContinueHandler>(),
                     std::make_shared<HttpObjectAggregator>(16)};
  ch.write_inbound(upload("100-continue", 2), LastHttpContent{ByteBuf::from("ok"), {}});
  CHECK(testing::drain_outbound_bytes(ch) == "HTTP/1.1 100 Continue\r\n\r\n");
  auto full = ch.read_inbound<FullHttpRequest>();
  REQUIRE(full);
  CHECK(full->content.to_string() == "ok");
}

TEST_CASE("status lines: standard ones for both versions, unknown codes, custom phrases") {
  HttpResponseEncoder::Options options;
  options.add_date_header = false;
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(options)};
  auto line_of = [&](HttpVersion version, HttpResponseStatus status) {
    FullHttpResponse r;
    r.version = version;
    r.status = std::move(status);
    ch.write_outbound(std::move(r));
    const auto wire = testing::drain_outbound_bytes(ch);
    return wire.substr(0, wire.find("\r\n") + 2);
  };
  CHECK(line_of(kHttp11, {200, {}}) == "HTTP/1.1 200 OK\r\n");
  CHECK(line_of(kHttp10, {200, {}}) == "HTTP/1.0 200 OK\r\n");
  CHECK(line_of(kHttp11, {404, {}}) == "HTTP/1.1 404 Not Found\r\n");
  CHECK(line_of(kHttp10, {503, {}}) == "HTTP/1.0 503 Service Unavailable\r\n");
  CHECK(line_of(kHttp11, {799, {}}) == "HTTP/1.1 799 \r\n");
  CHECK(line_of(kHttp11, {65535, {}}) == "HTTP/1.1 65535 \r\n");
  CHECK(line_of(kHttp11, {200, "Fine Indeed"}) == "HTTP/1.1 200 Fine Indeed\r\n");
  CHECK(line_of(kHttp11, {418, std::string(300, 'r')}) ==
        "HTTP/1.1 418 " + std::string(300, 'r') + "\r\n");
}

TEST_CASE("the Date line is one IMF-fixdate field") {
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>()};
  ch.write_outbound(hello());
  const auto wire = testing::drain_outbound_bytes(ch);
  const auto at = wire.find("\r\nDate: ");
  REQUIRE(at != std::string::npos);
  const auto date = wire.substr(at + 8, wire.find("\r\n", at + 2) - at - 8);
  CHECK(date.size() == 29);
  CHECK(date.substr(25) == " GMT");
  CHECK(date == HttpDateCache::for_this_thread().get(ch.event_loop().current_time_nanos()));
}

TEST_CASE("a refused response leaves the responses held before and after it intact") {
  HttpResponseEncoder::Options options;
  options.add_date_header = false;
  auto encoder = std::make_shared<HttpResponseEncoder>(options);
  EmbeddedChannel ch{encoder};
  FullHttpResponse a;
  a.content = ByteBuf::from("a");
  ch.write(Message(std::move(a)));
  FullHttpResponse evil;
  evil.headers.add("X-Long-Enough-Name", std::string(200, 'v') + "\r\nSet-Cookie: x");
  evil.content = ByteBuf::from("evil");
  ch.write(Message(std::move(evil)));
  CHECK_THROWS_AS(ch.check_exception(), trellis::codec::EncoderError);
  FullHttpResponse b;
  b.content = ByteBuf::from("b");
  ch.write(Message(std::move(b)));
  ch.flush();
  CHECK(testing::drain_outbound_bytes(ch) ==
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na"
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb");
}

TEST_CASE("a reason phrase with CR, LF, NUL or another control is refused and writes nothing") {
  HttpResponseEncoder::Options options;
  options.add_date_header = false;
  const std::string bad[] = {"OK\r\nSet-Cookie: x",
                             "OK\nX: y",
                             "OK\r",
                             std::string("O\0K", 3),
                             "O\x01K",
                             "O\x1fK",
                             "O\x7fK",
                             std::string(300, 'r') + "\r\nSet-Cookie: x"};  // too long to be held
  for (const auto& reason : bad) {
    CAPTURE(reason);
    auto encoder = std::make_shared<HttpResponseEncoder>(options);
    EmbeddedChannel ch{encoder};
    FullHttpResponse a;
    a.content = ByteBuf::from("a");
    ch.write(Message(std::move(a)));
    const std::size_t held = encoder->held_bytes();
    FullHttpResponse evil;
    evil.status = {200, reason};
    evil.content = ByteBuf::from("evil");
    ch.write(Message(std::move(evil)));
    CHECK_THROWS_AS(ch.check_exception(), trellis::codec::EncoderError);
    CHECK(encoder->held_bytes() == held);  // the held buffer's writer index did not move
    CHECK(ch.outbound_messages().empty());
    HttpResponse head_only;  // the path of a head whose body follows: refused the same
    head_only.status = {200, reason};
    ch.write(Message(std::move(head_only)));
    CHECK_THROWS_AS(ch.check_exception(), trellis::codec::EncoderError);
    FullHttpResponse b;
    b.content = ByteBuf::from("b");
    ch.write(Message(std::move(b)));
    ch.flush();
    CHECK(testing::drain_outbound_bytes(ch) ==
          "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na"
          "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb");
  }
  // HTAB, SP and obs-text are reason-phrase characters (RFC 9112 §4).
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(options)};
  FullHttpResponse fine;
  fine.status = {200, "All\tfine, caf\xc3\xa9"};
  ch.write_outbound(std::move(fine));
  CHECK(testing::drain_outbound_bytes(ch) ==
        "HTTP/1.1 200 All\tfine, caf\xc3\xa9\r\nContent-Length: 0\r\n\r\n");
}
