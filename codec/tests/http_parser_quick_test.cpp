// The one-pass parse of a whole request head against the scan-then-parse path: for random heads
// (valid ones and ones with a stray byte anywhere, under random limits) the head given whole
// and the same head given a byte at a time (which the one-pass walk never sees whole) end the
// same way, with the same parts or the same status. The walk is also called directly, to show
// which heads take it.
#include <doctest/doctest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include <trellis/codec/http/http_parser.hpp>

namespace trellis::http {
// The parser's private one-pass walk, for these tests.
struct HttpParserTestPeer {
  static bool walks(const HttpParser& parser, const ByteBuf& in) {
    HttpParser::QuickHead head;
    return parser.walk_request_head(in, head);
  }
  static bool at_fresh_start(const HttpParser& parser) { return parser.at_fresh_start(); }
};
}  // namespace trellis::http

using namespace trellis;
using namespace trellis::http;

namespace {

// A request head flattened for comparison, or the status it failed with.
struct Result {
  std::uint16_t status = 0;
  bool complete = false;
  std::string method, target, version;
  std::vector<std::pair<std::string, std::string>> fields;
  std::vector<HeaderId> ids;
  std::size_t left = 0;  // input bytes after the head

  bool operator==(const Result&) const = default;
};

// The first head of input, fed into a buffer in pieces of `step` bytes (0: whole) until
// next_head(buffer) finds one, flattened from head's parts; or the status it failed with.
template <class Head, class NextHead>
Result first_head(std::string_view input, std::size_t step, Head& head, NextHead&& next_head) {
  ByteBuf in = ByteBuf::from("");
  std::size_t fed = 0;
  Result r;
  try {
    for (;;) {
      const std::size_t n = step == 0 ? input.size() - fed : std::min(step, input.size() - fed);
      in.write_string(input.substr(fed, n));
      fed += n;
      if (next_head(in)) break;
      if (fed == input.size()) return r;
    }
  } catch (const HttpParseError& e) {
    r.status = e.status();
    return r;
  }
  r.complete = true;
  r.method = std::string(head.method.name());
  r.target = head.target;
  r.version = std::string(head.version.text());
  for (std::size_t i = 0; i < head.headers.size(); ++i) {
    r.fields.emplace_back(std::string(head.headers[i].name), std::string(head.headers[i].value));
    r.ids.push_back(head.headers.id_at(i));
  }
  r.left = in.readable_bytes() + (input.size() - fed);
  return r;
}

// Through parse_request_head, as the server decoder does.
Result head_in_place(std::string_view input, std::size_t step, const HttpParserLimits& limits) {
  HttpParser parser(HttpParser::Kind::kRequest, limits);
  FullHttpRequest full;
  return first_head(input, step, full, [&](ByteBuf& in) {
    return parser.parse_request_head(in, [&] {
      return HttpParser::RequestHeadParts{full.method, full.target, full.version, full.headers};
    });
  });
}

// Through parse(), as the HttpRequest event.
Result head_event(std::string_view input, std::size_t step, const HttpParserLimits& limits) {
  HttpParser parser(HttpParser::Kind::kRequest, limits);
  HttpRequest request;
  return first_head(input, step, request, [&](ByteBuf& in) {
    auto e = parser.parse(in);
    auto* head = std::get_if<HttpRequest>(&e);
    if (head != nullptr) request = std::move(*head);
    return head != nullptr;
  });
}

// Names after the Host field: well-known ones in several cases, and others. None can fail the
// framing checks (Content-Length is always 0) until a byte of the head is changed.
const char* const kNames[] = {"Accept",       "accept",         "ACCEPT",       "User-Agent",
                              "Content-Type", "Content-Length", "Connection",   "X-Custom",
                              "x-a",          "Cookie",         "If-None-Match"};
const int kProbes[] = {0x00, 0x01, '\t', '\n', '\r', ' ', '"', ':', '@', 0x7f, 0x80, 0xff, '0'};

}  // namespace

TEST_CASE("a head given whole parses in one pass exactly as it does a byte at a time") {
  std::mt19937 rng(20261207);
  auto pick = [&](std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
  };
  const char* const methods[] = {"GET", "POST", "HEAD", "PUT", "PATCH", "M-SEARCH", "GETX"};
  const char* const versions[] = {"HTTP/1.1", "HTTP/1.0", "HTTP/1.1", "HTTP/2.0", "HTTP/1.1 "};
  std::size_t walked = 0, clean_rounds = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string wire = std::string(methods[pick(0, 6)]) + " /" + std::string(pick(0, 60), 'p') +
                       " " + versions[pick(0, 4)] + "\r\nHost: h\r\n";
    const std::size_t fields = pick(0, 29);  // with Host, across the walk's 24-field bound
    for (std::size_t f = 0; f < fields; ++f) {
      const char* name = kNames[pick(0, std::size(kNames) - 1)];
      std::string value;
      for (std::size_t k = pick(0, 40); k > 0; --k) {
        value += static_cast<char>(pick(0, 5) == 0 ? 0x80 + pick(0, 0x7f) : pick(0x20, 0x7e));
      }
      if (std::string_view(name) == "Content-Length") value = "0";
      wire += std::string(name) + ":" + std::string(pick(0, 2), pick(0, 1) ? ' ' : '\t') + value +
              std::string(pick(0, 1), ' ') + "\r\n";
    }
    wire += "\r\n";
    wire += "GET /next HTTP/1.1\r\n";  // the start of the next request, left in the input
    const bool clean = pick(0, 2) == 0;
    if (!clean) {
      // One byte replaced or inserted somewhere in the head.
      const std::size_t at = pick(0, wire.size() - 21);
      const char b = static_cast<char>(kProbes[pick(0, std::size(kProbes) - 1)]);
      if (pick(0, 1)) {
        wire[at] = b;
      } else {
        wire.insert(wire.begin() + static_cast<std::ptrdiff_t>(at), b);
      }
    }
    HttpParserLimits limits;
    if (pick(0, 2) == 0) {
      limits.max_initial_line_length = pick(4, 90);
      limits.max_header_size = pick(0, 900);
      limits.max_header_count = pick(0, 30);
    }
    CAPTURE(round);
    CAPTURE(wire);
    const Result whole = head_in_place(wire, 0, limits);
    const Result bytewise = head_in_place(wire, 1, limits);
    CHECK(whole == bytewise);
    CHECK(head_event(wire, 0, limits) == head_event(wire, 1, limits));
    CHECK(head_event(wire, 0, limits) == whole);

    HttpParser parser(HttpParser::Kind::kRequest, limits);
    const bool walks = HttpParserTestPeer::walks(parser, ByteBuf::from(wire));
    if (walks) {
      // What the walk takes breaks no rule of the scan: no limit is reached, the version is
      // supported. A changed byte may still fail a framing check (a Content-Length of "@").
      CHECK(bytewise.status != 414);
      CHECK(bytewise.status != 431);
      CHECK(bytewise.status != 505);
      if (clean) CHECK(bytewise.complete);
    }
    if (clean && limits.max_header_size == HttpParserLimits{}.max_header_size && fields < 24) {
      ++clean_rounds;
      if (walks) ++walked;
    }
  }
  // Clean heads within the default limits and the walk's field bound take the walk unless their
  // version is not 1.0 or 1.1 or has a space after it: 3 of the 5 versions drawn.
  CHECK(walked > clean_rounds / 2);
  CHECK(walked < clean_rounds);
}

TEST_CASE("the one-pass walk takes whole, valid heads and leaves everything else") {
  HttpParser parser(HttpParser::Kind::kRequest);
  auto walks = [&](std::string_view wire) {
    return HttpParserTestPeer::walks(parser, ByteBuf::from(wire));
  };
  CHECK(walks("GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"));
  CHECK(walks("GET / HTTP/1.0\r\n\r\n"));
  CHECK(walks("DELETE /x HTTP/1.1\r\nHost: h\r\nX-Y:\t v \t\r\n\r\nGET / HTTP/1.1\r\n"));
  CHECK(walks("GET / HTTP/1.1\r\nHost: h\r\nX: caf\xc3\xa9\r\n\r\n"));  // obs-text
  CHECK_FALSE(walks("GET / HTTP/1.1\r\nHost: h\r\n"));                  // cut short
  CHECK_FALSE(walks("GET / HTTP/1.1\r\nHost: h\r\n\r"));
  CHECK_FALSE(walks("\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"));  // an empty line first
  CHECK_FALSE(walks("GET / HTTP/1.2\r\nHost: h\r\n\r\n"));
  CHECK_FALSE(walks("GET / HTTP/1.1\nHost: h\r\n\r\n"));
  CHECK_FALSE(walks("GET / HTTP/1.1\r\nHost : h\r\n\r\n"));
  CHECK_FALSE(walks("GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n"));
  CHECK_FALSE(walks("GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n"));
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 25; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  CHECK_FALSE(walks(many + "\r\n"));  // more fields than the walk keeps: the parse takes them
  // A head exactly at the line and block limits is walked; one byte more is not.
  HttpParserLimits limits;
  limits.max_initial_line_length = 16;  // "GET /ab HTTP/1.1" is 16
  limits.max_header_size = 11;          // "Host: h\r\n" + "\r\n"
  HttpParser tight(HttpParser::Kind::kRequest, limits);
  CHECK(HttpParserTestPeer::walks(tight, ByteBuf::from("GET /ab HTTP/1.1\r\nHost: h\r\n\r\n")));
  CHECK_FALSE(
      HttpParserTestPeer::walks(tight, ByteBuf::from("GET /abc HTTP/1.1\r\nHost: h\r\n\r\n")));
  CHECK_FALSE(
      HttpParserTestPeer::walks(tight, ByteBuf::from("GET /ab HTTP/1.1\r\nHost: hh\r\n\r\n")));
}

TEST_CASE("a head resumed after a partial scan is not walked again") {
  HttpParser parser(HttpParser::Kind::kRequest);
  ByteBuf in = ByteBuf::from("GET / HTTP/1.1\r\nHo");
  CHECK(std::holds_alternative<std::monostate>(parser.parse(in)));
  CHECK_FALSE(HttpParserTestPeer::at_fresh_start(parser));  // the scan goes on from where it was
  in.write_string("st: h\r\n\r\n");
  auto e = parser.parse(in);
  REQUIRE(std::holds_alternative<HttpRequest>(e));
  CHECK(std::get<HttpRequest>(e).headers.get(HeaderId::kHost) == "h");
  CHECK(std::holds_alternative<LastHttpContent>(parser.parse(in)));
  CHECK(HttpParserTestPeer::at_fresh_start(parser));
}
