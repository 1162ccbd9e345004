#include <doctest/doctest.h>

#include <trellis/codec/http/http_date.hpp>
#include <trellis/codec/http/http_head_writer.hpp>
#include <trellis/codec/http/http_parser.hpp>

using namespace trellis;
using namespace trellis::http;

TEST_CASE("a response head is written in wire format and parses back") {
  HttpHeaders h;
  h.add(header::kContentType, "text/plain");
  h.add(header::kContentLength, "13");
  auto out = ByteBuf::from("");
  write_response_head(out, kHttp11, HttpResponseStatus{200, {}}, h);
  CHECK(out.to_string() ==
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\n");
  out.write_string("Hello, World!");
  HttpParser parser(HttpParser::Kind::kResponse);
  auto head = parser.parse(out);
  REQUIRE(std::holds_alternative<HttpResponse>(head));
  CHECK(std::get<HttpResponse>(head).headers.get("content-length") == "13");
  auto body = parser.parse(out);
  REQUIRE(std::holds_alternative<LastHttpContent>(body));
  CHECK(std::get<LastHttpContent>(body).content.to_string() == "Hello, World!");
}

TEST_CASE("request heads and chunk framing round trip through the parser") {
  HttpHeaders h;
  h.add("Host", "example");
  h.add("Transfer-Encoding", "chunked");
  auto out = ByteBuf::from("");
  write_request_head(out, HttpMethod::kPost, "/up", kHttp11, h);
  write_chunk_header(out, 26);
  out.write_string("abcdefghijklmnopqrstuvwxyz");
  write_chunk_end(out);
  HttpHeaders trailers;
  trailers.add("X-Sum", "1");
  write_last_chunk(out, trailers);
  HttpParser parser(HttpParser::Kind::kRequest);
  CHECK(std::holds_alternative<HttpRequest>(parser.parse(out)));
  auto chunk = parser.parse(out);
  REQUIRE(std::holds_alternative<HttpContent>(chunk));
  CHECK(std::get<HttpContent>(chunk).content.to_string() == "abcdefghijklmnopqrstuvwxyz");
  auto last = parser.parse(out);
  REQUIRE(std::holds_alternative<LastHttpContent>(last));
  CHECK(std::get<LastHttpContent>(last).trailers->get("x-sum") == "1");
}

TEST_CASE("CR or LF in a field is detected as unsafe") {
  HttpHeaders h;
  h.add("X", "ok");
  CHECK_FALSE(has_unsafe_field(h));
  h.add("Y", "a\r\nSet-Cookie: evil");
  CHECK(has_unsafe_field(h));
}

TEST_CASE("a CR, LF or NUL is found at every position of values of every length") {
  // The check goes eight characters at a time: cover short values, word boundaries and the
  // overlapping last word, and the neighbours of the three characters (never flagged).
  for (std::size_t length = 0; length <= 40; ++length) {
    const std::string clean(length, 'a');
    HttpHeaders ok;
    ok.add("X", clean);
    CHECK_FALSE(has_unsafe_field(ok));
    for (std::size_t at = 0; at < length; ++at) {
      for (const char c : {'\r', '\n', '\0', '\x0b', '\x0c', '\x0e', '\x09', '\x8d', '\x8a', '\x80',
                           '\x01', '\xff', ' '}) {
        std::string value = clean;
        value[at] = c;
        HttpHeaders h;
        h.add("X", value);
        CAPTURE(length);
        CAPTURE(at);
        CAPTURE(static_cast<int>(static_cast<unsigned char>(c)));
        CHECK(has_unsafe_field(h) == (c == '\r' || c == '\n' || c == '\0'));
      }
    }
  }
  HttpHeaders name;
  name.add("X-Evil\r\nInjected", "v");
  CHECK(has_unsafe_field(name));
}

TEST_CASE("a TAB in a value does not hide a CR, LF or NUL elsewhere in it, nor count as one") {
  // Any control character below 0x0E sends the check on to look for the three exactly.
  for (std::size_t length = 2; length <= 24; ++length) {
    for (std::size_t tab = 0; tab < length; ++tab) {
      std::string with_tab(length, 'v');
      with_tab[tab] = '\t';
      HttpHeaders clean;
      clean.add("X", with_tab);
      CAPTURE(length);
      CAPTURE(tab);
      CHECK_FALSE(has_unsafe_field(clean));
      for (std::size_t at = 0; at < length; ++at) {
        if (at == tab) continue;
        for (const char c : {'\r', '\n', '\0'}) {
          std::string value = with_tab;
          value[at] = c;
          HttpHeaders h;
          h.add("X", value);
          CAPTURE(at);
          CHECK(has_unsafe_field(h));
        }
      }
    }
  }
}

TEST_CASE("put_text copies texts of every length exactly, writing nothing past them") {
  // Overlapping word copies below 65 bytes, memcpy above: every length across the edges.
  for (std::size_t length = 0; length <= 100; ++length) {
    std::string text;
    for (std::size_t i = 0; i < length; ++i) text += static_cast<char>('A' + i % 26);
    std::string out(length + 8, '.');
    char* end = put_text(out.data(), text);
    CAPTURE(length);
    CHECK(end == out.data() + length);
    CHECK(out.substr(0, length) == text);
    CHECK(out.substr(length) == std::string(8, '.'));
  }
}

TEST_CASE("HTTP dates use the IMF-fixdate format and are cached per second of the clock") {
  CHECK(format_http_date(784111777) == "Sun, 06 Nov 1994 08:49:37 GMT");
  HttpDateCache cache;
  auto a = std::string(cache.get(0));
  CHECK(a.size() == 29);
  CHECK(a.substr(a.size() - 3) == "GMT");
  CHECK(cache.get(999'999'999).data() == cache.get(500).data());
}

TEST_CASE("keep-alive follows the version and the Connection header") {
  HttpHeaders none;
  CHECK(is_keep_alive(kHttp11, none));
  CHECK_FALSE(is_keep_alive(kHttp10, none));
  HttpHeaders close;
  close.add("Connection", "Close");
  CHECK_FALSE(is_keep_alive(kHttp11, close));
  HttpHeaders ka;
  ka.add("Connection", "foo, keep-alive");
  CHECK(is_keep_alive(kHttp10, ka));
}
