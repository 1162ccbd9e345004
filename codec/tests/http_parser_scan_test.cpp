// The parser's vector scans at their boundaries: a bad byte at every offset of a line, heads that
// end at every offset of a 64-byte window, limits that fall anywhere, and every way of splitting
// the input, checked against plain byte-by-byte reference rules.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <trellis/codec/http/http_parser.hpp>

using namespace trellis;
using namespace trellis::http;

namespace {

bool ref_tchar(unsigned char c) {
  return std::isalnum(c) ||
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}
bool ref_field_char(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }
bool ref_ows(char c) { return c == ' ' || c == '\t'; }

// The head scan rules byte by byte on the whole input (request side): the status of the first
// rule broken, else the length of the head (0 when it is incomplete) and its line count.
struct ModelScan {
  std::uint16_t status = 0;
  std::size_t length = 0;
  std::size_t lines = 0;
};
ModelScan model_scan(std::string_view text, const HttpParserLimits& limits) {
  std::size_t skipped = 0;
  while (text.size() - skipped >= 2 && text[skipped] == '\r' && text[skipped + 1] == '\n') {
    skipped += 2;
  }
  text.remove_prefix(skipped);
  std::size_t line_start = 0, first_line_end = 0, lines = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      if (i == 0 || text[i - 1] != '\r') return {400};
      if (i - 1 == line_start) return {0, skipped + i + 1, lines};
      if (lines == 0) first_line_end = i + 1;
      ++lines;
      if (lines - 1 > limits.max_header_count) return {431};
      line_start = i + 1;
      continue;
    }
    if (c == '\r') {
      if (i + 1 < text.size() && text[i + 1] != '\n') return {400};
    } else if (lines == 0 && i - line_start >= limits.max_initial_line_length) {
      return {414};
    }
    if (lines > 0 && i + 1 - first_line_end > limits.max_header_size + 2) return {431};
  }
  return {};
}

// The outcome of parsing up to the first request head.
struct Outcome {
  std::uint16_t status = 0;
  std::optional<HttpRequest> request;
};

// Feeds input in pieces that end at the given offsets (and at the end), stopping at the first
// head or error.
Outcome parse_first(std::string_view input, const std::vector<std::size_t>& cuts,
                    const HttpParserLimits& limits = {}) {
  HttpParser parser(HttpParser::Kind::kRequest, limits);
  ByteBuf cumulation = ByteBuf::from("");
  Outcome out;
  std::size_t from = 0;
  auto ends = cuts;
  ends.push_back(input.size());
  try {
    for (std::size_t end : ends) {
      cumulation.write_string(input.substr(from, end - from));
      from = end;
      for (;;) {
        auto e = parser.parse(cumulation);
        if (auto* r = std::get_if<HttpRequest>(&e)) {
          out.request = std::move(*r);
          return out;
        }
        if (std::holds_alternative<std::monostate>(e)) break;
      }
    }
  } catch (const HttpParseError& e) {
    out.status = e.status();
  }
  return out;
}

Outcome parse_first(std::string_view input, const HttpParserLimits& limits = {}) {
  return parse_first(input, {}, limits);
}

std::vector<std::size_t> every_byte(std::size_t n) {
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i < n; ++i) cuts.push_back(i);
  return cuts;
}

// A field line by the original rules: 400, or the name and trimmed value.
struct RefField {
  std::uint16_t status = 0;
  std::string name, value;
};
RefField reference_field(std::string_view line) {
  const RefField bad{400, {}, {}};
  if (line.empty() || ref_ows(line.front())) return bad;
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return bad;
  const auto name = line.substr(0, colon);
  for (char c : name) {
    if (!ref_tchar(static_cast<unsigned char>(c))) return bad;
  }
  auto value = line.substr(colon + 1);
  while (!value.empty() && ref_ows(value.front())) value.remove_prefix(1);
  while (!value.empty() && ref_ows(value.back())) value.remove_suffix(1);
  for (char c : value) {
    if (!ref_field_char(static_cast<unsigned char>(c))) return bad;
  }
  return {0, std::string(name), std::string(value)};
}

// A request line by the original rules: 400, 505, or 0.
std::uint16_t reference_request_line(std::string_view line) {
  const auto sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return 400;
  for (char c : line.substr(0, sp1)) {
    if (!ref_tchar(static_cast<unsigned char>(c))) return 400;
  }
  const auto rest = line.substr(sp1 + 1);
  const auto sp2 = rest.find(' ');
  if (sp2 == std::string_view::npos || sp2 == 0) return 400;
  for (char c : rest.substr(0, sp2)) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return 400;
  }
  const auto v = rest.substr(sp2 + 1);
  if (v == "HTTP/1.1" || v == "HTTP/1.0") return 0;
  if (v.size() == 8 && v.substr(0, 5) == "HTTP/" &&
      std::isdigit(static_cast<unsigned char>(v[5])) && v[6] == '.' &&
      std::isdigit(static_cast<unsigned char>(v[7]))) {
    return 505;
  }
  return 400;
}

// Bytes worth trying in every position: controls, the delimiters, the edges of each class.
const std::vector<int> kProbeBytes = {0x00, 0x01, '\t', '\n', 0x0b, '\r', 0x1f, ' ', '!', '"',
                                      '(',  ',',  '/',  ':',  ';',  '@',  '[',  '^', '`', '{',
                                      '|',  '}',  '~',  0x7f, 0x80, 0xc3, 0xff, 'a', 'Z', '0'};

}  // namespace

TEST_CASE("a bad byte at every offset of a field value is found, whatever the alignment") {
  for (std::size_t pad = 0; pad < 70; pad += 3) {  // moves the line across 16- and 64-byte edges
    const std::string before =
        "GET / HTTP/1.1\r\nHost: h\r\nX-Pad: " + std::string(pad, 'p') + "\r\nX-Value: ";
    const std::string value(41, 'v');
    for (std::size_t k = 0; k < value.size(); ++k) {
      for (int b : kProbeBytes) {
        std::string v = value;
        v[k] = static_cast<char>(b);
        const std::string wire = before + v + "\r\nAccept: */*\r\n\r\n";
        CAPTURE(pad);
        CAPTURE(k);
        CAPTURE(b);
        const auto ref = reference_field("X-Value: " + v);
        const auto out = parse_first(wire);
        if (b == '\r' || b == '\n') {
          CHECK(out.status == 400);  // a bare CR or LF in the head
          continue;
        }
        CHECK(out.status == ref.status);
        if (ref.status == 0) {
          REQUIRE(out.request);
          CHECK(out.request->headers.get("x-value") == ref.value);
          CHECK(out.request->headers.size() == 4);
        }
      }
    }
  }
}

TEST_CASE("a bad byte at every offset of a field name is found") {
  for (const std::string name : {"User-Agent", "Content-Type", "X-A-Rather-Long-Custom-Name-1234",
                                 "te", "Transfer-Encoding"}) {
    for (std::size_t k = 0; k < name.size(); ++k) {
      for (int b : kProbeBytes) {
        std::string n = name;
        n[k] = static_cast<char>(b);
        const std::string line = n + ": value";
        CAPTURE(line);
        const auto out = parse_first("GET / HTTP/1.1\r\nHost: h\r\n" + line + "\r\n\r\n");
        if (b == '\r' || b == '\n') {
          CHECK(out.status == 400);
          continue;
        }
        const auto ref = reference_field(line);
        if (ref.status != 0) {
          CHECK(out.status == 400);
          continue;
        }
        // A valid line may still name a framing header with a value that is not valid for it.
        if (out.status != 0) {
          CHECK((header_id(ref.name) == HeaderId::kTransferEncoding ||
                 header_id(ref.name) == HeaderId::kContentLength));
          continue;
        }
        REQUIRE(out.request);
        CHECK(out.request->headers[1].value == ref.value);
        CHECK(iequals(out.request->headers[1].name, ref.name));
        CHECK(out.request->headers.id_at(1) == header_id(ref.name));
      }
    }
  }
}

TEST_CASE("a bad byte at every offset of a request line is found") {
  const std::string line = "GET /a/rather/long/path/to/cross/a/vector?q=1&r=2 HTTP/1.1";
  for (std::size_t k = 0; k < line.size(); ++k) {
    for (int b : kProbeBytes) {
      std::string l = line;
      l[k] = static_cast<char>(b);
      CAPTURE(l);
      const auto out = parse_first(l + "\r\nHost: h\r\n\r\n");
      if (b == '\r' || b == '\n') {
        CHECK(out.status == 400);
        continue;
      }
      const auto ref = reference_request_line(l);
      CHECK(out.status == ref);
      if (ref == 0) {
        REQUIRE(out.request);
        const auto sp1 = l.find(' ');
        const auto sp2 = l.find(' ', sp1 + 1);
        CHECK(out.request->method.name() == l.substr(0, sp1));
        CHECK(out.request->target == l.substr(sp1 + 1, sp2 - sp1 - 1));
      }
    }
  }
}

TEST_CASE("a head may end at any offset of a window, followed by anything") {
  for (std::size_t pad = 0; pad < 140; ++pad) {
    const std::string head =
        "GET /w HTTP/1.1\r\nHost: h\r\nX-Pad: " + std::string(pad, 'p') + "\r\n\r\n";
    for (const std::string& tail :
         std::vector<std::string>{"", "\n", "\r", "\r\r\n\nX", std::string(70, '\n'),
                                  "GET /next HTTP/1.1\r\nHost: h\r\n\r\n"}) {
      const std::string wire = head + tail;
      CAPTURE(pad);
      CAPTURE(tail);
      for (const auto& cuts : {std::vector<std::size_t>{}, every_byte(wire.size())}) {
        const auto out = parse_first(wire, cuts);
        CHECK(out.status == 0);
        REQUIRE(out.request);
        CHECK(out.request->headers.get("x-pad") == std::string(pad, 'p'));
      }
    }
    // The same bytes after the head parse as the next message.
    HttpParser parser(HttpParser::Kind::kRequest);
    auto in = ByteBuf::from(head + "GET /next HTTP/1.1\r\nHost: n\r\n\r\n");
    std::vector<std::string> targets;
    for (;;) {
      auto e = parser.parse(in);
      if (std::holds_alternative<std::monostate>(e)) break;
      if (auto* r = std::get_if<HttpRequest>(&e)) targets.push_back(r->target);
    }
    CHECK(targets == std::vector<std::string>{"/w", "/next"});
  }
}

TEST_CASE("random heads, limits and splits give the reference scan result") {
  std::mt19937 rng(20240611);
  auto pick = [&](std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
  };
  const std::string tchars = "abcXYZ019!#$%&'*+-.^_`|~";
  for (int round = 0; round < 3000; ++round) {
    std::string wire = (pick(0, 4) == 0 ? "\r\n" : "") + std::string("GET /") +
                       std::string(pick(0, 150), 't') + " HTTP/1.1\r\nHost: h\r\n";
    const std::size_t fields = pick(0, 12);
    for (std::size_t f = 0; f < fields; ++f) {
      wire += "X-";
      for (std::size_t k = pick(1, 20); k > 0; --k) wire += tchars[pick(0, tchars.size() - 1)];
      wire += ":" + std::string(pick(0, 2), ' ');
      for (std::size_t k = pick(0, 90); k > 0; --k) {
        wire += static_cast<char>(pick(0, 3) == 0 ? 0x80 + pick(0, 0x7f) : pick(0x20, 0x7e));
      }
      wire += "\r\n";
    }
    wire += "\r\n";
    for (std::size_t k = pick(0, 70); k > 0; --k) wire += "ab\r\n\n"[pick(0, 4)];
    // Mostly one stray CR or LF somewhere (inside the head or after it).
    if (pick(0, 3) != 0) {
      wire.insert(wire.begin() + static_cast<std::ptrdiff_t>(pick(0, wire.size())),
                  pick(0, 1) ? '\r' : '\n');
    }
    HttpParserLimits limits;
    if (pick(0, 1)) {
      limits.max_initial_line_length = pick(1, 200);
      limits.max_header_size = pick(1, 1200);
      limits.max_header_count = pick(0, 14);
    }
    const auto model = model_scan(wire, limits);
    std::vector<std::size_t> cuts;
    switch (pick(0, 2)) {
      case 0:
        break;
      case 1:
        cuts = every_byte(wire.size());
        break;
      default:
        for (std::size_t at = pick(1, 80); at < wire.size(); at += pick(1, 80)) cuts.push_back(at);
    }
    CAPTURE(round);
    CAPTURE(wire);
    const auto out = parse_first(wire, cuts, limits);
    CHECK(out.status == model.status);
    if (model.status == 0 && model.length != 0) {
      REQUIRE(out.request);
      CHECK(out.request->headers.size() == model.lines - 1);
    } else {
      CHECK(!out.request);
    }
  }
}

TEST_CASE("long chunked messages with trailers decode the same for every split") {
  std::string wire = "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nX-Long: " +
                     std::string(90, 'l') + "\r\n\r\n";
  wire += "1a\r\n" + std::string(26, 'x') + "\r\n";
  wire += "5;ext=" + std::string(60, 'e') + "\r\nhello\r\n";
  wire += "0\r\nX-Trailer-One: " + std::string(50, '1') + "\r\nX-Trailer-Two: 2\r\n\r\n";
  wire += "GET /after HTTP/1.1\r\nHost: h\r\n\r\n";
  auto parse_split = [&](const std::vector<std::size_t>& cuts) {
    HttpParser parser(HttpParser::Kind::kRequest);
    ByteBuf cumulation = ByteBuf::from("");
    std::vector<std::string> events;
    std::string body;
    std::size_t from = 0;
    auto ends = cuts;
    ends.push_back(wire.size());
    for (std::size_t end : ends) {
      cumulation.write_string(std::string_view(wire).substr(from, end - from));
      from = end;
      for (;;) {
        auto e = parser.parse(cumulation);
        if (std::holds_alternative<std::monostate>(e)) break;
        if (auto* r = std::get_if<HttpRequest>(&e)) events.push_back("H" + r->target);
        if (auto* c = std::get_if<HttpContent>(&e)) body += c->content.to_string();
        if (auto* l = std::get_if<LastHttpContent>(&e)) {
          body += l->content.to_string();
          std::string trailers;
          for (auto f : *l->trailers)
            trailers += std::string(f.name) + "=" + std::string(f.value) + ";";
          events.push_back("B" + body + "|" + trailers);
          body.clear();
        }
      }
    }
    return events;
  };
  const auto whole = parse_split({});
  REQUIRE(whole.size() == 4);
  CHECK(whole[1] == "B" + std::string(26, 'x') + "hello|X-Trailer-One=" + std::string(50, '1') +
                        ";X-Trailer-Two=2;");
  CHECK(parse_split(every_byte(wire.size())) == whole);
  for (std::size_t split = 1; split < wire.size(); ++split) {
    CAPTURE(split);
    CHECK(parse_split({split}) == whole);
  }
}
