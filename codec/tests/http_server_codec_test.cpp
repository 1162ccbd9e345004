#include <doctest/doctest.h>

#include <string>

#include <trellis/http.hpp>
#include <trellis/pipeline.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/testing.hpp>
#include <trellis/testing/doctest_helpers.hpp>

using namespace trellis;
using namespace trellis::http;

namespace {
// Answers every aggregated request with its target as the body.
class EchoTarget : public SimpleChannelInboundHandler<FullHttpRequest> {
 protected:
  void channel_read0(ChannelHandlerContext& ctx, FullHttpRequest& request) override {
    FullHttpResponse response;
    response.content = ByteBuf::from(request.target);
    ctx.write(Message(std::move(response)));
  }
  void channel_read_complete(ChannelHandlerContext& ctx) override { ctx.flush(); }
};

HttpResponseEncoder::Options no_date() {
  HttpResponseEncoder::Options o;
  o.add_date_header = false;
  return o;
}
}  // namespace

TEST_CASE("pipelined requests in one read are answered in order") {
  EmbeddedChannel ch{std::make_shared<HttpServerCodec>(HttpParserLimits{}, no_date()),
                     std::make_shared<HttpObjectAggregator>(1 << 20),
                     std::make_shared<EchoTarget>()};
  ch.write_inbound(
      ByteBuf::from("GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /bb HTTP/1.1\r\nHost: h\r\n\r\n"
                    "POST /ccc HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz"));
  CHECK(testing::drain_outbound_bytes(ch) ==
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n/a"
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n/bb"
        "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n/ccc");
}

TEST_CASE("a request split at every byte is decoded the same") {
  const std::string wire =
      "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n";
  for (std::size_t split = 1; split < wire.size(); ++split) {
    EmbeddedChannel ch{std::make_shared<HttpServerCodec>(),
                       std::make_shared<HttpObjectAggregator>(1 << 20)};
    ch.write_inbound(ByteBuf::from(wire.substr(0, split)));
    ch.write_inbound(ByteBuf::from(wire.substr(split)));
    auto full = ch.read_inbound<FullHttpRequest>();
    REQUIRE(full);
    CHECK(full->target == "/up");
    CHECK(full->content.to_string() == "abcd");
  }
}

TEST_CASE("a bad request is answered with its status and Connection: close, then closed") {
  struct Case {
    std::string wire;
    std::string status_line;
  };
  const Case cases[] = {
      {"GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n"},
      {"GET /" + std::string(5000, 'x') + " HTTP/1.1\r\n", "HTTP/1.1 414 URI Too Long\r\n"},
      {"GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(9000, 'v') + "\r\n\r\n",
       "HTTP/1.1 431 Request Header Fields Too Large\r\n"},
      {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n",
       "HTTP/1.1 501 Not Implemented\r\n"},
      {"GET / HTTP/2.0\r\nHost: h\r\n\r\n", "HTTP/1.1 505 HTTP Version Not Supported\r\n"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.status_line);
    EmbeddedChannel ch{std::make_shared<HttpServerCodec>()};
    ch.write_inbound(ByteBuf::from(c.wire));
    auto wire = testing::drain_outbound_bytes(ch);
    CHECK(wire.rfind(c.status_line, 0) == 0);
    CHECK(wire.find("Connection: close\r\n") != std::string::npos);
    // A lingering close: the output is shut down at once, the channel closes after a while.
    CHECK(ch.is_output_shutdown());
    ch.advance_by(std::chrono::seconds(2));
    CHECK_FALSE(ch.is_open());
    CHECK_FALSE(ch.read_inbound<Message>());
    CHECK(ch.exceptions().empty());  // answered, not propagated
  }
}

TEST_CASE("a response to HEAD keeps its headers and drops its body") {
  EmbeddedChannel ch{std::make_shared<HttpServerCodec>(HttpParserLimits{}, no_date()),
                     std::make_shared<HttpObjectAggregator>(1 << 20),
                     std::make_shared<EchoTarget>()};
  ch.write_inbound(ByteBuf::from("HEAD /abc HTTP/1.1\r\nHost: h\r\n\r\n"));
  CHECK(testing::drain_outbound_bytes(ch) == "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n");
}

TEST_CASE("the client codec frames responses to HEAD and reads bodies until close") {
  EmbeddedChannel ch{std::make_shared<HttpClientCodec>(),
                     std::make_shared<HttpObjectAggregator>(1 << 20)};
  FullHttpRequest head;
  head.method = HttpMethod::kHead;
  head.target = "/x";
  head.headers.add(header::kHost, "h");
  ch.write_outbound(std::move(head));
  CHECK(testing::drain_outbound_bytes(ch) == "HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n");
  ch.write_inbound(ByteBuf::from("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"));
  auto r = ch.read_inbound<FullHttpResponse>();
  REQUIRE(r);
  CHECK(r->content.readable_bytes() == 0);

  FullHttpRequest get;
  get.target = "/y";
  get.headers.add(header::kHost, "h");
  ch.write_outbound(std::move(get));
  testing::drain_outbound_bytes(ch);
  ch.write_inbound(ByteBuf::from("HTTP/1.0 200 OK\r\n\r\nall of it"));
  CHECK_FALSE(ch.read_inbound<Message>());
  ch.finish();
  auto until_close = ch.read_inbound<FullHttpResponse>();
  REQUIRE(until_close);
  CHECK(until_close->content.to_string() == "all of it");
}

TEST_CASE("decoding a typical GET allocates nothing once warm") {
  EmbeddedChannel ch{std::make_shared<HttpServerCodec>()};
  const std::string get =
      "GET /plaintext HTTP/1.1\r\nHost: localhost\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n";
  ch.write_inbound(ByteBuf::from(get));
  while (ch.read_inbound<Message>()) {
  }
  auto in = ByteBuf::from(get);
  testing::AllocationScope allocations;
  ch.write_inbound(std::move(in));
  auto head = ch.read_inbound<HttpRequest>();
  auto last = ch.read_inbound<LastHttpContent>();
  // The request head's Message box is recycled and its header block is a pooled buffer: no
  // heap allocation at all, let alone one per header field. (Under ASan the box caches are off:
  // the box is then the one allocation.)
#if TRELLIS_NODE_CACHE_ENABLED
  CHECK(allocations.count() == 0);
#else
  CHECK(allocations.count() <= 1);
#endif
  CHECK(head);
  CHECK(last);
}

namespace {
FullHttpResponse hello_response(std::string body) {
  FullHttpResponse response;
  response.content = ByteBuf::from(body);
  return response;
}
}  // namespace

TEST_CASE("responses written without a promise leave as one buffer at the flush") {
  auto codec = std::make_shared<HttpServerCodec>(HttpParserLimits{}, no_date());
  EmbeddedChannel ch{codec};
  ch.write(Message(hello_response("a")));
  ch.write(Message(hello_response("bb")));
  // Held by the encoder, not yet in the outbound buffer.
  CHECK(codec->held_bytes() > 0);
  CHECK(ch.outbound_messages().empty());
  ch.flush();
  CHECK(codec->held_bytes() == 0);
  auto buf = ch.read_outbound<ByteBuf>();
  REQUIRE(buf);
  CHECK(buf->to_string() ==
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na"
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nbb");
  CHECK(ch.outbound_messages().empty());
}

TEST_CASE("held responses go before a write with a promise, a large body and other messages") {
  auto codec = std::make_shared<HttpServerCodec>(HttpParserLimits{}, no_date());
  EmbeddedChannel ch{codec};
  ch.write(Message(hello_response("1")));
  auto promise = ch.new_promise();
  auto done = promise.future();
  ch.write(Message(hello_response("2")), std::move(promise));  // waited for: written alone
  ch.write(Message(hello_response("3")));
  ch.write(Message(hello_response(std::string(kCopyBodyThreshold + 1, 'L'))));  // head + body
  ch.write(Message(hello_response("4")));
  ch.write(Message(ByteBuf::from("raw")));  // not HTTP: passed on, after what is held
  ch.write(Message(hello_response("5")));
  ch.flush();
  CHECK(done.is_done());
  CHECK(done.is_success());
  std::vector<std::string> pieces;
  while (auto buf = ch.read_outbound<ByteBuf>()) pieces.push_back(buf->to_string());
  const std::string large = "HTTP/1.1 200 OK\r\nContent-Length: 129\r\n\r\n";
  REQUIRE(pieces.size() == 8);
  CHECK(pieces[0] == "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1");
  CHECK(pieces[1] == "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2");
  CHECK(pieces[2] == "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n3");
  CHECK(pieces[3] == large);
  CHECK(pieces[4] == std::string(kCopyBodyThreshold + 1, 'L'));
  CHECK(pieces[5] == "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n4");
  CHECK(pieces[6] == "raw");
  CHECK(pieces[7] == "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n5");
}

TEST_CASE("held responses go on, unflushed, each time their buffer is full") {
  auto codec = std::make_shared<HttpServerCodec>(HttpParserLimits{}, no_date());
  EmbeddedChannel ch{codec};
  const std::size_t before = ch.bytes_before_unwritable();
  const std::string one = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'x');
  std::size_t written = 0;
  std::size_t count = 0;
  while (written < 4 * kHeldBufferSize) {
    ch.write(Message(hello_response(std::string(100, 'x'))));
    written += one.size();
    ++count;
  }
  // Never more than one buffer's worth held back from the outbound buffer, where the water marks
  // see the rest; nothing is flushed yet.
  CHECK(codec->held_bytes() > 0);
  CHECK(codec->held_bytes() <= kHeldBufferSize);
  CHECK(ch.bytes_before_unwritable() <= before - (written - codec->held_bytes()));
  CHECK(ch.outbound_messages().empty());
  ch.flush();
  CHECK(codec->held_bytes() == 0);
  std::vector<std::string> pieces;
  while (auto buf = ch.read_outbound<ByteBuf>()) pieces.push_back(buf->to_string());
  CHECK(pieces.size() >= 4);
  std::string all;
  for (const auto& piece : pieces) {
    CHECK(piece.size() <= kHeldBufferSize);
    CHECK(piece.size() % one.size() == 0);  // whole responses per buffer
    all += piece;
  }
  std::string expected;
  for (std::size_t i = 0; i < count; ++i) expected += one;
  CHECK(all == expected);
}

TEST_CASE("a codec removed with responses held writes them on first") {
  auto codec = std::make_shared<HttpServerCodec>(HttpParserLimits{}, no_date());
  EmbeddedChannel ch{codec};
  ch.write(Message(hello_response("up")));
  ch.pipeline().remove(*codec);
  ch.flush();
  CHECK(testing::drain_outbound_bytes(ch) == "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nup");
}

TEST_CASE("closing with responses held fails them like any unflushed write") {
  auto codec = std::make_shared<HttpServerCodec>(HttpParserLimits{}, no_date());
  EmbeddedChannel ch{codec};
  ch.write(Message(hello_response("gone")));
  CHECK(codec->held_bytes() > 0);
  ch.close();
  CHECK(codec->held_bytes() == 0);
  CHECK(ch.outbound_messages().empty());
}

TEST_CASE("full_bodiless_requests: a request without a body goes on as one FullHttpRequest") {
  HttpRequestDecoderOptions options;
  options.full_bodiless_requests = true;
  EmbeddedChannel ch{std::make_shared<HttpServerCodec>(HttpParserLimits{}, no_date(), options)};
  ch.write_inbound(
      ByteBuf::from("GET /a HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n\r\n"
                    "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz"
                    "PUT /c HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
                    "POST /d HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                    "HEAD /e HTTP/1.1\r\nHost: h\r\n\r\n"));
  auto a = ch.read_inbound<FullHttpRequest>();
  REQUIRE(a);
  CHECK(a->method == HttpMethod::kGet);
  CHECK(a->target == "/a");
  CHECK(a->headers.get("x-a") == "1");
  CHECK_FALSE(a->content.is_readable());
  CHECK(a->trailers.empty());
  // A body, however short, keeps the head / content / last content sequence.
  auto b = ch.read_inbound<HttpRequest>();
  REQUIRE(b);
  CHECK(b->target == "/b");
  auto b_last = ch.read_inbound<LastHttpContent>();
  REQUIRE(b_last);
  CHECK(b_last->content.to_string() == "xyz");
  auto c = ch.read_inbound<FullHttpRequest>();
  REQUIRE(c);
  CHECK(c->target == "/c");
  auto d = ch.read_inbound<HttpRequest>();
  REQUIRE(d);
  CHECK(d->target == "/d");
  REQUIRE(ch.read_inbound<LastHttpContent>());
  auto e = ch.read_inbound<FullHttpRequest>();
  REQUIRE(e);
  CHECK(e->method == HttpMethod::kHead);
  CHECK(ch.inbound_messages().empty());
  // The encoder still knows the methods in order: the answer to HEAD (the last) has no body.
  for (int i = 0; i < 4; ++i) ch.write(Message(hello_response("body")));
  ch.write(Message(hello_response("dropped")));
  ch.flush();
  const std::string wire = testing::drain_outbound_bytes(ch);
  CHECK(wire.substr(wire.size() - 42) ==
        "body"
        "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n");
}

TEST_CASE("full_bodiless_requests: an aggregating pipeline sees the same requests either way") {
  const std::string wire =
      "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
      "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz"
      "DELETE /c HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nX: y\r\n\r\n";
  auto requests = [&](bool full) {
    HttpRequestDecoderOptions options;
    options.full_bodiless_requests = full;
    EmbeddedChannel ch{std::make_shared<HttpServerCodec>(HttpParserLimits{}, no_date(), options),
                       std::make_shared<HttpServerKeepAliveHandler>(),
                       std::make_shared<HttpServerExpectContinueHandler>(),
                       std::make_shared<HttpObjectAggregator>(1 << 20)};
    ch.write_inbound(ByteBuf::from(wire));
    std::vector<std::string> seen;
    while (auto r = ch.read_inbound<FullHttpRequest>()) {
      std::string line{r->method.name()};
      line += " " + r->target + " [" + r->content.to_string() + "]";
      for (const auto f : r->headers)
        line += " " + std::string(f.name) + "=" + std::string(f.value);
      seen.push_back(line);
    }
    CHECK(ch.inbound_messages().empty());
    return seen;
  };
  const auto combined = requests(true);
  CHECK(combined.size() == 3);
  CHECK(combined == requests(false));
}

TEST_CASE("full_bodiless_requests: the same events and the same rejections at every split") {
  // With the option the decoder parses heads into their FullHttpRequest directly: every split of
  // the input must give what the event path gives, and a head rejected after it was complete
  // (no Host) must leave nothing half-built in the pipeline.
  const std::string good =
      "\r\nGET /a HTTP/1.1\r\nHost: h\r\nAccept: */*\r\n\r\n"
      "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz"
      "GET /c?q=1 HTTP/1.0\r\nHost: h\r\n\r\n";
  const std::string bad = "GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nAccept: x\r\n\r\n";
  auto run = [](const std::string& wire, std::size_t split, bool full) {
    HttpRequestDecoderOptions options;
    options.full_bodiless_requests = full;
    EmbeddedChannel ch{std::make_shared<HttpServerCodec>(HttpParserLimits{}, no_date(), options),
                       std::make_shared<HttpObjectAggregator>(1 << 20)};
    ch.write_inbound(ByteBuf::from(wire.substr(0, split)));
    if (ch.is_active()) ch.write_inbound(ByteBuf::from(wire.substr(split)));  // not if rejected
    std::vector<std::string> seen;
    for (auto& m : ch.inbound_messages()) {
      const auto* r = m.try_get<FullHttpRequest>();
      REQUIRE(r);
      std::string line{r->method.name()};
      line += " " + r->target + " " + std::string(r->version.text()) + " [" +
              r->content.to_string() + "]";
      for (const auto f : r->headers)
        line += " " + std::string(f.name) + "=" + std::string(f.value);
      seen.push_back(line);
    }
    seen.push_back("wire: " + testing::drain_outbound_bytes(ch));
    return seen;
  };
  for (std::size_t split = 0; split <= good.size(); ++split) {
    CAPTURE(split);
    const auto with = run(good, split, true);
    CHECK(with.size() == 4);
    CHECK(with == run(good, split, false));
  }
  for (std::size_t split = 0; split <= bad.size(); ++split) {
    CAPTURE(split);
    const auto with = run(bad, split, true);
    REQUIRE(with.size() == 2);  // the first request, and nothing on the wire:
    CHECK(with[0] == "GET /a HTTP/1.1 [] Host=h");
    CHECK(with[1] == "wire: ");  // the 400 waits for the response to /a, which nobody wrote
    CHECK(with == run(bad, split, false));
  }
}

TEST_CASE("an invalid Host is answered 400 and closed, with or without full_bodiless_requests") {
  for (const bool full : {false, true}) {
    CAPTURE(full);
    HttpRequestDecoderOptions options;
    options.full_bodiless_requests = full;
    EmbeddedChannel ch{std::make_shared<HttpServerCodec>(HttpParserLimits{}, no_date(), options)};
    ch.write_inbound(ByteBuf::from("GET / HTTP/1.1\r\nHost: user@host\r\n\r\n"));
    const auto wire = testing::drain_outbound_bytes(ch);
    CHECK(wire.rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
    CHECK(wire.find("Connection: close\r\n") != std::string::npos);
    CHECK(ch.is_output_shutdown());  // lingering close
    ch.advance_by(std::chrono::seconds(2));
    CHECK_FALSE(ch.is_open());
    CHECK_FALSE(ch.read_inbound<Message>());
  }
}
