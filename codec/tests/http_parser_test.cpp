#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <trellis/codec/http/http_parser.hpp>

using namespace trellis;
using namespace trellis::http;

namespace {
// What a parse produced, flattened for comparison: "H:<method> <target>" / "R:<code>",
// "C:<bytes>" for content, "L:<bytes>|<trailer count>" for the last content.
struct Parsed {
  std::vector<std::string> events;
  std::vector<HttpRequest> requests;
  std::vector<HttpResponse> responses;
};

void collect(HttpParser::Event&& e, Parsed& out) {
  if (auto* r = std::get_if<HttpRequest>(&e)) {
    out.events.push_back("H:" + std::string(r->method.name()) + " " + r->target);
    out.requests.push_back(std::move(*r));
  } else if (auto* s = std::get_if<HttpResponse>(&e)) {
    out.events.push_back("R:" + std::to_string(s->status.code));
    out.responses.push_back(std::move(*s));
  } else if (auto* c = std::get_if<HttpContent>(&e)) {
    out.events.push_back("C:" + c->content.to_string());
  } else if (auto* l = std::get_if<LastHttpContent>(&e)) {
    out.events.push_back("L:" + l->content.to_string() + "|" + std::to_string(l->trailers->size()));
  }
}

// Merges adjacent content events so that byte-by-byte and whole-buffer parses compare equal.
std::vector<std::string> normalized(const std::vector<std::string>& events) {
  std::vector<std::string> out;
  std::string body;
  for (const auto& e : events) {
    if (e.rfind("C:", 0) == 0) {
      body += e.substr(2);
    } else if (e.rfind("L:", 0) == 0) {
      out.push_back("B:" + body + e.substr(2));
      body.clear();
    } else {
      out.push_back(e);
    }
  }
  return out;
}

Parsed parse_all(std::string_view input, HttpParser::Kind kind = HttpParser::Kind::kRequest,
                 HttpParserLimits limits = {}) {
  HttpParser parser(kind, limits);
  auto buf = ByteBuf::from(input);
  Parsed out;
  for (;;) {
    auto e = parser.parse(buf);
    if (std::holds_alternative<std::monostate>(e)) break;
    collect(std::move(e), out);
  }
  return out;
}

// Feeds one byte at a time into a growing cumulation.
Parsed parse_bytewise(std::string_view input, HttpParser::Kind kind = HttpParser::Kind::kRequest) {
  HttpParser parser(kind);
  ByteBuf cumulation = ByteBuf::from("");
  Parsed out;
  for (char c : input) {
    cumulation.write_string(std::string_view(&c, 1));
    for (;;) {
      auto e = parser.parse(cumulation);
      if (std::holds_alternative<std::monostate>(e)) break;
      collect(std::move(e), out);
    }
  }
  return out;
}

std::uint16_t error_status(std::string_view input, HttpParserLimits limits = {}) {
  try {
    parse_all(input, HttpParser::Kind::kRequest, limits);
  } catch (const HttpParseError& e) {
    return e.status();
  }
  return 0;
}
}  // namespace

TEST_CASE("a GET without body gives a head and an empty last content") {
  auto p = parse_all("GET /plaintext HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n");
  CHECK(p.events == std::vector<std::string>{"H:GET /plaintext", "L:|0"});
  REQUIRE(p.requests.size() == 1);
  auto& r = p.requests[0];
  CHECK(r.version == kHttp11);
  CHECK(r.headers.get("host") == "a");
  CHECK(r.headers.get("ACCEPT") == "*/*");
  CHECK(r.headers.size() == 2);
}

TEST_CASE("every input split gives the same messages as one buffer") {
  const std::string inputs[] = {
      "POST /e HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello",
      "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n10;name=val\r\n0123456789abcdef\r\n0\r\nX-T: 1\r\n\r\n",
      "\r\n\r\nGET / HTTP/1.0\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n",
  };
  for (const auto& in : inputs) {
    CAPTURE(in);
    CHECK(normalized(parse_bytewise(in).events) == normalized(parse_all(in).events));
  }
}

TEST_CASE("a fixed-length body arrives as slices, the last one ending the message") {
  auto p = parse_all("POST /e HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello");
  CHECK(p.events == std::vector<std::string>{"H:POST /e", "L:hello|0"});
  auto q = parse_bytewise("POST /e HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc");
  CHECK(q.events == std::vector<std::string>{"H:POST /e", "C:a", "C:b", "L:c|0"});
}

TEST_CASE("a chunked body gives chunks and a last content with trailers") {
  auto p = parse_all(
      "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n");
  CHECK(p.events == std::vector<std::string>{"H:POST /c", "C:abc", "C:0123456789", "L:|1"});
}

TEST_CASE("pipelined requests come out in order") {
  auto p = parse_all(
      "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n"
      "POST /3 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nokGET /4 HTTP/1.1\r\nHost: "
      "h\r\n\r\n");
  CHECK(p.events == std::vector<std::string>{"H:GET /1", "L:|0", "H:GET /2", "L:|0", "H:POST /3",
                                             "L:ok|0", "H:GET /4", "L:|0"});
}

TEST_CASE("leading empty lines are ignored") {
  auto p = parse_all("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n");
  CHECK(p.events == std::vector<std::string>{"H:GET /", "L:|0"});
}

TEST_CASE("header values are trimmed and order and duplicates are kept") {
  auto p = parse_all("GET / HTTP/1.1\r\nHost: h\r\nX-A: \t one \t\r\nx-a: two\r\n\r\n");
  auto& h = p.requests.at(0).headers;
  CHECK(h.get_all("X-A") == std::vector<std::string_view>{"one", "two"});
  CHECK(h[1].name == "X-A");
  CHECK(h[2].name == "x-a");
}

TEST_CASE("malformed request lines are 400") {
  CHECK(error_status("GET\r\n\r\n") == 400);
  CHECK(error_status("GET /\r\n\r\n") == 400);
  CHECK(error_status("GET  / HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
  CHECK(error_status("G@T / HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
  CHECK(error_status("GET /a\x01 HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTX/1.1\r\nHost: h\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/1.1 \r\nHost: h\r\n\r\n") == 400);
}

TEST_CASE("unsupported HTTP versions are 505") {
  CHECK(error_status("GET / HTTP/2.0\r\nHost: h\r\n\r\n") == 505);
  CHECK(error_status("GET / HTTP/1.2\r\nHost: h\r\n\r\n") == 505);
}

TEST_CASE("bare LF and bare CR are rejected") {
  CHECK(error_status("GET / HTTP/1.1\nHost: h\n\n") == 400);
  CHECK(error_status("GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n") == 400);
  CHECK(error_status("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
}

TEST_CASE("header syntax is validated") {
  CHECK(error_status("GET / HTTP/1.1\r\nHost : h\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/1.1\r\nHost: h\r\nNo colon\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/1.1\r\nHost: h\r\n: empty\r\n\r\n") == 400);
  CHECK(error_status(std::string_view("GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n", 36)) == 400);
  CHECK(error_status("GET / HTTP/1.1\r\nHost: h\r\nX: a\x7f\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/1.1\r\nHost: h\r\nX: caf\xc3\xa9\r\n\r\n") == 0);  // obs-text
}

TEST_CASE("Host is required once in HTTP/1.1") {
  CHECK(error_status("GET / HTTP/1.1\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == 400);
  CHECK(error_status("GET / HTTP/1.0\r\n\r\n") == 0);
}

TEST_CASE("Content-Length must be digits, agree with itself and not overflow") {
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n") == 400);
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n") == 400);
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1 2\r\n\r\n") == 400);
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x10\r\n\r\n") == 400);
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n") == 400);
  CHECK(error_status(
            "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n") == 400);
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 4\r\n\r\nabc") == 400);
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\nabc") == 0);
  CHECK(error_status(
            "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n") ==
        413);
  HttpParserLimits small;
  small.max_content_length = 10;
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", small) == 413);
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n", small) == 0);
}

TEST_CASE("Transfer-Encoding is never guessed") {
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
                     "Content-Length: 3\r\n\r\n") == 400);
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n") ==
        400);
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n") ==
        501);
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity\r\n\r\n") == 501);
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n") == 400);
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n\r\n") == 400);
  CHECK(error_status("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n") == 400);
  CHECK(error_status("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n") ==
        0);
}

TEST_CASE("chunk sizes and extensions are validated") {
  const std::string head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  CHECK(error_status(head + "g\r\n") == 400);
  CHECK(error_status(head + "\r\n") == 400);
  CHECK(error_status(head + "-1\r\n") == 400);
  CHECK(error_status(head + "3 x\r\nabc\r\n") == 400);
  CHECK(error_status(head + "3\r\nabcX\r\n") == 400);
  CHECK(error_status(head + "3;a=b\r\nabc\r\n0\r\n\r\n") == 0);
  CHECK(error_status(head + "3 ; a=b\r\nabc\r\n0\r\n\r\n") == 0);
  CHECK(error_status(head + "ffffffffffffffffffff\r\n") == 413);
  CHECK(error_status(head + "3;" + std::string(2000, 'a') + "\r\n") == 400);
  HttpParserLimits small;
  small.max_chunk_size = 16;
  CHECK(error_status(head + "11\r\n", small) == 413);
  CHECK(error_status(head + "10\r\n", small) == 0);
}

TEST_CASE("the chunk extensions of one message are bounded together, and counted per message") {
  const std::string head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  HttpParserLimits limits;
  limits.max_chunk_extensions_per_message = 100;
  const std::string ext = ";e=" + std::string(17, 'x');  // 20 bytes
  std::string five, six;
  for (int i = 0; i < 5; ++i) five += "1" + ext + "\r\nX\r\n";
  six = five + "1" + ext + "\r\nX\r\n";
  CHECK(error_status(head + five + "0\r\n\r\n", limits) == 0);  // exactly at the limit
  CHECK(error_status(head + six + "0\r\n\r\n", limits) == 400);
  // A second message starts from zero: two messages at the limit each are fine.
  CHECK(error_status(head + five + "0\r\n\r\n" + head + five + "0\r\n\r\n", limits) == 0);
  // The default: 64 KiB per message, so 1,000-byte extensions are refused at the 66th chunk.
  std::string flood = head;
  const std::string long_ext = ";e=" + std::string(997, 'x');
  for (int i = 0; i < 65; ++i) flood += "1" + long_ext + "\r\nX\r\n";
  CHECK(error_status(flood) == 0);
  CHECK(error_status(flood + "1" + long_ext + "\r\nX\r\n") == 400);
}

TEST_CASE("limits: a long request line is 414, a large header block or many fields 431") {
  CHECK(error_status("GET /" + std::string(5000, 'a') + " HTTP/1.1\r\nHost: h\r\n\r\n") == 414);
  CHECK(error_status("GET /" + std::string(5000, 'a')) == 414);  // before the line even ends
  CHECK(error_status("GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(9000, 'a') + "\r\n\r\n") ==
        431);
  std::string many = "GET / HTTP/1.1\r\nHost: h\r\n";
  for (int i = 0; i < 100; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  CHECK(error_status(many + "\r\n") == 431);
  HttpParserLimits limits;
  limits.max_initial_line_length = 10;
  CHECK(error_status("GET /12345 HTTP/1.1\r\n", limits) == 414);
}

TEST_CASE("a failed parser keeps failing") {
  HttpParser parser(HttpParser::Kind::kRequest);
  auto bad = ByteBuf::from("BAD\r\n\r\n");
  CHECK_THROWS_AS(parser.parse(bad), HttpParseError);
  auto good = ByteBuf::from("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  CHECK_THROWS_AS(parser.parse(good), HttpParseError);
  parser.reset();
  CHECK(std::holds_alternative<HttpRequest>(parser.parse(good)));
}

TEST_CASE("responses: bodies framed by length, chunks, or the connection close") {
  auto p = parse_all("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", HttpParser::Kind::kResponse);
  CHECK(p.events == std::vector<std::string>{"R:200", "L:hi|0"});
  CHECK(p.responses.at(0).status.reason_phrase() == "OK");

  HttpParser parser(HttpParser::Kind::kResponse);
  auto buf = ByteBuf::from("HTTP/1.0 200 OK\r\n\r\nuntil close");
  CHECK(std::holds_alternative<HttpResponse>(parser.parse(buf)));
  auto body = parser.parse(buf);
  REQUIRE(std::holds_alternative<HttpContent>(body));
  CHECK(std::get<HttpContent>(body).content.to_string() == "until close");
  auto last = parser.finish(buf);
  CHECK(std::holds_alternative<LastHttpContent>(last));
}

TEST_CASE("responses to HEAD and 1xx/204/304 responses have no body") {
  HttpParser parser(HttpParser::Kind::kResponse);
  parser.set_next_response_bodyless(true);
  auto buf = ByteBuf::from(
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
      "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n"
      "HTTP/1.1 304 Not Modified\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx");
  Parsed out;
  for (;;) {
    auto e = parser.parse(buf);
    if (std::holds_alternative<std::monostate>(e)) break;
    collect(std::move(e), out);
  }
  CHECK(out.events == std::vector<std::string>{"R:100", "L:|0", "R:200", "L:|0", "R:204", "L:|0",
                                               "R:304", "L:|0", "R:200", "L:x|0"});
}

TEST_CASE("a message cut short by the end of input is an error") {
  HttpParser parser(HttpParser::Kind::kRequest);
  auto buf = ByteBuf::from("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nab");
  parser.parse(buf);
  parser.parse(buf);
  CHECK_THROWS_AS(parser.finish(buf), HttpParseError);
}

TEST_CASE("parse_request_head fills the caller's parts once the head is whole") {
  HttpParser parser(HttpParser::Kind::kRequest);
  FullHttpRequest full;
  int calls = 0;
  auto make_parts = [&] {
    ++calls;
    return HttpParser::RequestHeadParts{full.method, full.target, full.version, full.headers};
  };
  // Empty lines before the head are skipped; a partial head asks for no destination yet.
  ByteBuf in = ByteBuf::from("\r\n\r\nPUT /x?y=1 HTTP/1.0\r\nHost: h\r\nContent-Le");
  CHECK_FALSE(parser.parse_request_head(in, make_parts));
  CHECK(calls == 0);
  in.write_string("ngth: 3\r\n\r\nabc");
  REQUIRE(parser.parse_request_head(in, make_parts));
  CHECK(calls == 1);
  CHECK(full.method == HttpMethod::kPut);
  CHECK(full.target == "/x?y=1");
  CHECK(full.version == kHttp10);
  CHECK(full.headers.get(HeaderId::kContentLength) == "3");
  // The body follows as parse() events, exactly as after an HttpRequest event.
  CHECK(parser.in_message());
  CHECK_FALSE(parser.at_empty_body());
  Parsed rest;
  collect(parser.parse(in), rest);
  CHECK(rest.events == std::vector<std::string>{"L:abc|0"});
  CHECK_FALSE(parser.in_message());
  // The same rules as parse(): HTTP/1.1 without Host is a 400.
  FullHttpRequest bad;
  ByteBuf no_host = ByteBuf::from("GET / HTTP/1.1\r\n\r\n");
  HttpParser strict(HttpParser::Kind::kRequest);
  try {
    strict.parse_request_head(no_host, [&] {
      return HttpParser::RequestHeadParts{bad.method, bad.target, bad.version, bad.headers};
    });
    FAIL("no error");
  } catch (const HttpParseError& e) {
    CHECK(e.status() == 400);
  }
  CHECK_THROWS_AS(strict.parse(no_host), HttpParseError);  // the parser stays failed
}

namespace {
// What each way of parsing a request with this Host value says: the error message ("" when the
// head is accepted) of parse() on one buffer, of parse() fed byte by byte, and of
// parse_request_head (the decoder's full_bodiless_requests path) on one buffer and byte by byte.
std::vector<std::string> host_outcomes(std::string_view host) {
  const std::string wire = "GET / HTTP/1.1\r\nHost: " + std::string(host) + "\r\n\r\n";
  auto outcome = [](auto&& run) -> std::string {
    try {
      run();
    } catch (const HttpParseError& e) {
      return std::to_string(e.status()) + " " + e.what();
    }
    return "";
  };
  auto head_parts = [](FullHttpRequest& full) {
    return [&full] {
      return HttpParser::RequestHeadParts{full.method, full.target, full.version, full.headers};
    };
  };
  return {
      outcome([&] { parse_all(wire); }),
      outcome([&] { parse_bytewise(wire); }),
      outcome([&] {
        HttpParser parser(HttpParser::Kind::kRequest);
        FullHttpRequest full;
        auto in = ByteBuf::from(wire);
        const bool parsed = parser.parse_request_head(in, head_parts(full));  // may throw
        REQUIRE(parsed);
      }),
      outcome([&] {
        HttpParser parser(HttpParser::Kind::kRequest);
        FullHttpRequest full;
        ByteBuf in = ByteBuf::from("");
        bool parsed = false;
        for (char c : wire) {
          REQUIRE_FALSE(parsed);
          in.write_string(std::string_view(&c, 1));
          parsed = parser.parse_request_head(in, head_parts(full));
        }
        REQUIRE(parsed);
      }),
  };
}
}  // namespace

TEST_CASE("a Host that is not uri-host [\":\" port] is 400, however the head arrives") {
  const std::string_view bad[] = {
      "bad host",     "a b",         "user@host",   "h@",      "host:port-not-a-number",
      "h:8o",         "h:+80",       "h:-1",        "h:99999", "h:65536",
      "h:",           "h::80",       ":80",         "h:80:80", "%zz",
      "%2",           "a%",          "a%g0",        "a/b",     "a?b",
      "a#b",          "a\"b",        "a<b",         "[::1",    "::1",
      "[::1]x",       "[::1]:",      "[::1]:99999", "[zz::1]", "[1:2:3:4:5:6:7:8:9]",
      "[::1%25eth0]", "[127.0.0.1]", "[]",          "[v1]",    "[v.x]",
      "[vz.x]",       "[v1.]",       "[v1.x y]",    "h]",      "caf\xc3\xa9",
      "a\tb"};
  for (const auto host : bad) {
    CAPTURE(host);
    for (const auto& outcome : host_outcomes(host)) {
      CHECK(outcome.rfind("400 invalid Host header", 0) == 0);
    }
  }
}

TEST_CASE("a Host of reg-name, IPv4 or IP literal with an optional port up to 65535 is accepted") {
  const std::string_view good[] = {"example.com",
                                   "example.com:8080",
                                   "127.0.0.1:80",
                                   "127.0.0.1",
                                   "999.1.1.1",  // not an IPv4address, so a reg-name
                                   "[::1]:8080",
                                   "[::1]",
                                   "[2001:DB8::ff00:42:8329]",
                                   "[::ffff:192.0.2.1]:443",
                                   "[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]",
                                   "[v1.x]",
                                   "[V1F.a:b!$&'()*+,;=-._~]",
                                   "",
                                   "a%20b",
                                   "%C3%A9",
                                   "xn--bcher-kva.example",
                                   "h:0",
                                   "h:65535",
                                   "h:00080",
                                   "!$&'()*+,;=-._~"};
  for (const auto host : good) {
    CAPTURE(host);
    for (const auto& outcome : host_outcomes(host)) CHECK(outcome == "");
  }
  // Optional whitespace around the value is not part of it.
  CHECK(error_status("GET / HTTP/1.1\r\nHost: \t example.com:80 \t\r\n\r\n") == 0);
}

TEST_CASE("HTTP/1.0 needs no Host, but one it sends is validated") {
  CHECK(error_status("GET / HTTP/1.0\r\n\r\n") == 0);
  CHECK(error_status("GET / HTTP/1.0\r\nHost: example.com\r\n\r\n") == 0);
  CHECK(error_status("GET / HTTP/1.0\r\nHost: bad host\r\n\r\n") == 400);
}

namespace {
// Parses one request head from in with parse_request_head (the decoder's path) on parser; the
// error status, or 0.
std::uint16_t head_status(HttpParser& parser, ByteBuf& in, FullHttpRequest& full) {
  try {
    const bool parsed = parser.parse_request_head(in, [&full] {
      return HttpParser::RequestHeadParts{full.method, full.target, full.version, full.headers};
    });
    REQUIRE(parsed);
    if (parser.in_message()) parser.skip_empty_body();
  } catch (const HttpParseError& e) {
    return e.status();
  }
  return 0;
}
}  // namespace

TEST_CASE("a Host value different from the last valid one on the connection is validated again") {
  const std::string long_host(60, 'h');  // longer than the value remembered
  struct Step {
    std::string host;
    std::uint16_t status;
  };
  const std::vector<std::vector<Step>> runs = {
      {{"a.example", 0}, {"a.example", 0}, {"a example", 400}},  // same length, invalid
      {{"a.example", 0}, {"a.example:", 400}},                   // a valid one extended
      {{"a.example:80", 0}, {"a.example", 0}, {"a.exampl@", 400}},
      {{long_host, 0}, {long_host, 0}, {long_host + " x", 400}},
      {{"", 0}, {"", 0}, {"a%", 400}},
  };
  for (const auto& run : runs) {
    HttpParser parser(HttpParser::Kind::kRequest);
    for (const auto& step : run) {
      CAPTURE(step.host);
      ByteBuf in = ByteBuf::from("GET / HTTP/1.1\r\nHost: " + step.host + "\r\n\r\n");
      FullHttpRequest full;
      CHECK(head_status(parser, in, full) == step.status);
      if (step.status != 0) break;  // a failed parser keeps failing
      CHECK(full.headers.get(HeaderId::kHost) == step.host);
    }
  }
}

TEST_CASE("a remembered Host differing in any one byte, at any length, is validated again") {
  // The remembered value is compared in overlapping words: a difference anywhere must show.
  for (std::size_t length = 1; length <= 48; ++length) {
    for (std::size_t k = 0; k < length; ++k) {
      std::string host(length, 'h');
      std::string bad = host;
      bad[k] = '@';  // not allowed in a reg-name
      HttpParser parser(HttpParser::Kind::kRequest);
      CAPTURE(length);
      CAPTURE(k);
      ByteBuf first = ByteBuf::from("GET / HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
      FullHttpRequest a;
      REQUIRE(head_status(parser, first, a) == 0);
      ByteBuf second = ByteBuf::from("GET / HTTP/1.1\r\nHost: " + bad + "\r\n\r\n");
      FullHttpRequest b;
      CHECK(head_status(parser, second, b) == 400);
    }
  }
}

TEST_CASE("bytes after the head in the buffer's spare room change nothing") {
  // The head's short scans may load 16 bytes past the head when the storage has them: whatever
  // those bytes hold (line breaks, colons, controls, spaces), the result is the head's alone.
  const std::string heads[] = {
      "GET /a HTTP/1.1\r\nHost: h\r\n\r\n",
      "GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX: 1\r\n\r\n",
      "DELETE /d HTTP/1.1\r\nHost: h\r\nAccept: */*\r\n\r\n",
      "GETS /g HTTP/1.1\r\nHost: h\r\n\r\n",
  };
  const std::string junk[] = {std::string(32, ' '),  std::string(32, ':'),
                              std::string(32, '\r'), std::string(32, '\n'),
                              std::string(32, '\0'), std::string(32, '\x7f')};
  for (const auto& head : heads) {
    Parsed reference = parse_all(head);
    REQUIRE(reference.requests.size() == 1);
    const HttpRequest& want = reference.requests[0];
    for (const auto& tail : junk) {
      for (const bool shared : {false, true}) {
        CAPTURE(head);
        CAPTURE(shared);
        ByteBuf in = ByteBuf::from(head + tail);
        in.set_writer_index(head.size());  // the junk stays in the spare room
        ByteBuf other_handle = shared ? in.share() : ByteBuf();
        HttpParser parser(HttpParser::Kind::kRequest);
        FullHttpRequest full;
        REQUIRE(head_status(parser, in, full) == 0);
        CHECK(full.method == want.method);
        CHECK(full.target == want.target);
        REQUIRE(full.headers.size() == want.headers.size());
        for (std::size_t i = 0; i < want.headers.size(); ++i) {
          CHECK(full.headers[i].name == want.headers[i].name);
          CHECK(full.headers[i].value == want.headers[i].value);
        }
        CHECK_FALSE(in.is_readable());
      }
    }
  }
  // Arriving a byte at a time into a buffer whose spare room holds line breaks: the head is
  // complete exactly when its last byte is in, never earlier.
  for (const auto& head : heads) {
    for (const auto& tail : junk) {
      CAPTURE(head);
      ByteBuf in = ByteBuf::from(head + tail);
      HttpParser parser(HttpParser::Kind::kRequest);
      FullHttpRequest full;
      auto parts = [&full] {
        return HttpParser::RequestHeadParts{full.method, full.target, full.version, full.headers};
      };
      for (std::size_t k = 1; k < head.size(); ++k) {
        in.set_writer_index(k);
        REQUIRE_FALSE(parser.parse_request_head(in, parts));
      }
      in.set_writer_index(head.size());
      REQUIRE(parser.parse_request_head(in, parts));
      CHECK(full.target == parse_all(head).requests[0].target);
    }
  }
  // A request line cut right after the method is still malformed with spare room after it.
  for (const std::string bad : {"GET  / HTTP/1.1\r\nHost: h\r\n\r\n", "GET\t/ HTTP/1.1\r\n\r\n",
                                "GET /\x01 HTTP/1.1\r\nHost: h\r\n\r\n"}) {
    CAPTURE(bad);
    ByteBuf in = ByteBuf::from(bad + std::string(32, 'x'));
    in.set_writer_index(bad.size());
    HttpParser parser(HttpParser::Kind::kRequest);
    FullHttpRequest full;
    CHECK(head_status(parser, in, full) == 400);
  }
}
