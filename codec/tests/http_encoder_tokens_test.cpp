// The encoders refuse heads that would not read back as one message: a method or a field name
// that is not an RFC 9110 token, a request target with whitespace or controls. Each is refused
// with EncoderError before a byte is written; the good ones are written unchanged.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/codec/http/http_response_encoder.hpp>
#include <trellis/codec/http/http_server_codec.hpp>
#include <trellis/testing.hpp>
#include <trellis/testing/doctest_helpers.hpp>

using namespace trellis;
using namespace trellis::http;

namespace {

// Names and methods that are not tokens: separators, whitespace, controls, obs-text, empty.
const std::vector<std::string> kNotTokens = {
    "",
    "GET / HTTP/1.1\r\nHost: x\r\n\r\nDELETE",
    "GET /",
    "A B",
    "A\tB",
    "X:Y",
    "X(Y)",
    "X,Y",
    "X/Y",
    "X;Y",
    "X<Y>",
    "X=Y",
    "X?Y",
    "X@Y",
    "X[Y]",
    "X\\Y",
    "X\"Y",
    "X{Y}",
    std::string("X\0Y", 3),
    "X\x01Y",
    "X\x7fY",
    "X\x80Y",
    "X\xffY",
};

// Every tchar (RFC 9110 §5.6.2): "!#$%&'*+-.^_`|~", DIGIT, ALPHA.
const std::string kAllTchars =
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

std::exception_ptr write_failure(EmbeddedChannel& ch, Message msg) {
  auto done = ch.new_promise();
  ch.write(std::move(msg), done);
  ch.flush();
  REQUIRE(done.is_done());
  if (done.is_success()) return {};
  return done.future().cause();
}

bool is_encoder_error(const std::exception_ptr& e) {
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const codec::EncoderError&) {
    return true;
  } catch (...) {
    return false;
  }
}

FullHttpRequest request(HttpMethod method, std::string target = "/") {
  FullHttpRequest r;
  r.method = std::move(method);
  r.target = std::move(target);
  r.headers.add(HeaderId::kHost, "h");
  return r;
}

HttpRequest request_head(HttpMethod method, std::string target = "/") {
  HttpRequest r;
  r.method = std::move(method);
  r.target = std::move(target);
  r.headers.add(HeaderId::kHost, "h");
  return r;
}

HttpResponseEncoder::Options no_date() {
  HttpResponseEncoder::Options o;
  o.add_date_header = false;
  return o;
}

}  // namespace

TEST_CASE("a request method that is not a token is refused with EncoderError, nothing written") {
  for (const auto& bad : kNotTokens) {
    CAPTURE(bad);
    EmbeddedChannel ch{std::make_shared<HttpRequestEncoder>()};
    CHECK(is_encoder_error(write_failure(ch, Message(request(HttpMethod::of(bad))))));
    CHECK(ch.outbound_messages().empty());
    CHECK(is_encoder_error(write_failure(ch, Message(request_head(HttpMethod::of(bad))))));
    CHECK(ch.outbound_messages().empty());
  }
}

TEST_CASE("request methods that are tokens are written as they are") {
  for (const std::string& method : {std::string("GET"), std::string("PROPFIND"),
                                    std::string("M-SEARCH"), std::string("get"), kAllTchars}) {
    CAPTURE(method);
    EmbeddedChannel ch{std::make_shared<HttpRequestEncoder>()};
    CHECK_FALSE(write_failure(ch, Message(request(HttpMethod::of(method)))));
    CHECK(testing::drain_outbound_bytes(ch) == method + " / HTTP/1.1\r\nHost: h\r\n\r\n");
  }
  EmbeddedChannel ch{std::make_shared<HttpRequestEncoder>()};
  CHECK_FALSE(write_failure(ch, Message(request(HttpMethod::kDelete, "/x"))));
  CHECK(testing::drain_outbound_bytes(ch) == "DELETE /x HTTP/1.1\r\nHost: h\r\n\r\n");
}

TEST_CASE("a request target that is empty or holds SP, CTL or non-ASCII is refused") {
  const std::vector<std::string> bad = {"",
                                        "/a b",
                                        "/ HTTP/1.1\r\nHost: x\r\n\r\nDELETE /x",
                                        "/a\tb",
                                        "/a\rb",
                                        "/a\nb",
                                        std::string("/a\0b", 4),
                                        "/a\x7f",
                                        "/\x80",
                                        "/\xc3\xa9"};
  for (const auto& target : bad) {
    CAPTURE(target);
    EmbeddedChannel ch{std::make_shared<HttpRequestEncoder>()};
    CHECK(is_encoder_error(write_failure(ch, Message(request(HttpMethod::kGet, target)))));
    CHECK(is_encoder_error(write_failure(ch, Message(request_head(HttpMethod::kGet, target)))));
    CHECK(ch.outbound_messages().empty());
  }
  EmbeddedChannel ch{std::make_shared<HttpRequestEncoder>()};
  const std::string good = "/a/b?c=d&e=%20f#g!$'()*+,;:@~";
  CHECK_FALSE(write_failure(ch, Message(request(HttpMethod::kGet, good))));
  CHECK(testing::drain_outbound_bytes(ch) == "GET " + good + " HTTP/1.1\r\nHost: h\r\n\r\n");
}

TEST_CASE("a request header name that is not a token is refused, in the head and in trailers") {
  for (const auto& bad : kNotTokens) {
    CAPTURE(bad);
    EmbeddedChannel ch{std::make_shared<HttpRequestEncoder>()};
    auto r = request(HttpMethod::kGet);
    r.headers.add(bad, "v");
    CHECK(is_encoder_error(write_failure(ch, Message(std::move(r)))));
    CHECK(ch.outbound_messages().empty());

    auto chunked = request(HttpMethod::kPost);
    chunked.headers.add(HeaderId::kTransferEncoding, "chunked");
    chunked.content = ByteBuf::from("abc");
    chunked.trailers.mutate().add(bad, "v");
    CHECK(is_encoder_error(write_failure(ch, Message(std::move(chunked)))));
    CHECK(ch.outbound_messages().empty());
  }
}

TEST_CASE("a response header name that is not a token is refused, held or not, nothing written") {
  for (const auto& bad : kNotTokens) {
    CAPTURE(bad);
    auto encoder = std::make_shared<HttpResponseEncoder>(no_date());
    EmbeddedChannel ch{encoder};
    FullHttpResponse a;
    a.content = ByteBuf::from("a");
    ch.write(Message(std::move(a)));
    const std::size_t held = encoder->held_bytes();

    FullHttpResponse evil;  // held path: a void promise
    evil.headers.add(bad, "v");
    evil.content = ByteBuf::from("evil");
    ch.write(Message(std::move(evil)));
    CHECK_THROWS_AS(ch.check_exception(), codec::EncoderError);
    CHECK(encoder->held_bytes() == held);

    FullHttpResponse with_promise;  // its own buffer
    with_promise.headers.add(bad, "v");
    CHECK(is_encoder_error(write_failure(ch, Message(std::move(with_promise)))));

    HttpResponse head_only;
    head_only.headers.add(bad, "v");
    CHECK(is_encoder_error(write_failure(ch, Message(std::move(head_only)))));

    HttpResponse chunked;
    chunked.headers.add(HeaderId::kTransferEncoding, "chunked");
    ch.write(Message(std::move(chunked)));
    LastHttpContent last;
    last.trailers.mutate().add(bad, "v");
    CHECK(is_encoder_error(write_failure(ch, Message(std::move(last)))));
    // Only what was fine went out: the held response and the chunked head.
    CHECK(testing::drain_outbound_bytes(ch) ==
          "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na"
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
  }
}

TEST_CASE("header names that are tokens are written as they are, well-known or not") {
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>(no_date())};
  FullHttpResponse r;
  r.headers.add(HeaderId::kContentType, "text/plain");
  r.headers.add("X-Request-Id", "1");
  r.headers.add(kAllTchars, "2");
  r.headers.add("x", "3");
  r.content = ByteBuf::from("ok");
  ch.write_outbound(std::move(r));
  CHECK(testing::drain_outbound_bytes(ch) ==
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Request-Id: 1\r\n" + kAllTchars +
            ": 2\r\nx: 3\r\nContent-Length: 2\r\n\r\nok");

  EmbeddedChannel client{std::make_shared<HttpRequestEncoder>()};
  auto q = request(HttpMethod::kGet);
  q.headers.add(kAllTchars, "v");
  client.write_outbound(std::move(q));
  CHECK(testing::drain_outbound_bytes(client) ==
        "GET / HTTP/1.1\r\nHost: h\r\n" + kAllTchars + ": v\r\n\r\n");
}

TEST_CASE("HttpClientCodec refuses a method that is not a token before writing") {
  EmbeddedChannel ch{std::make_shared<HttpClientCodec>()};
  CHECK(is_encoder_error(write_failure(
      ch, Message(request(HttpMethod::of("GET / HTTP/1.1\r\nHost: x\r\n\r\nDELETE"), "/x")))));
  CHECK(ch.outbound_messages().empty());
}

TEST_CASE("a request HttpClientCodec refused does not count as sent: the next response is framed") {
  EmbeddedChannel ch{std::make_shared<HttpClientCodec>()};
  CHECK(is_encoder_error(write_failure(ch, Message(request(HttpMethod::of("BAD METHOD"))))));
  CHECK_FALSE(write_failure(ch, Message(request(HttpMethod::kHead))));
  CHECK(testing::drain_outbound_bytes(ch) == "HEAD / HTTP/1.1\r\nHost: h\r\n\r\n");
  // The answer to the HEAD: no body, whatever Content-Length says.
  ch.write_inbound(ByteBuf::from("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"));
  std::vector<Message> in;
  while (auto m = ch.read_inbound()) in.push_back(std::move(*m));
  REQUIRE(in.size() == 2);
  CHECK(in[0].is<HttpResponse>());
  CHECK(in[1].is<LastHttpContent>());
}
