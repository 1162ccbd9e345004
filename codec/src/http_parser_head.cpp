// HttpParser, the head of a message (see http_parser.hpp): the request or status line, the field
// lines (copied once into the message's HttpHeaders, validated in one pass with vector scans) and
// the body framing the fields select. RFC 9112 references in comments.
#include <trellis/codec/http/http_parser.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "http_chars.hpp"
#include "http_head_lines.hpp"

namespace trellis::http {

namespace {

using detail::has_class;
using detail::is_field_char;
using detail::is_ows;
using detail::is_tchar;

bool is_token(std::string_view s) noexcept {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

std::string_view trim_ows(std::string_view s) noexcept {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

// Calls fn for each non-empty element of a comma-separated list.
template <class Fn>
void for_each_element(std::string_view list, Fn&& fn) {
  while (true) {
    auto comma = list.find(',');
    auto item = trim_ows(list.substr(0, comma));
    if (!item.empty()) fn(item);
    if (comma == std::string_view::npos) return;
    list.remove_prefix(comma + 1);
  }
}

// IPv6address (RFC 3986 §3.2.2: the text forms of RFC 4291), by inet_pton on a NUL-terminated
// copy. No zone identifier: RFC 6874 allows one in a URI for a local client, never on the wire.
bool is_ipv6_address(std::string_view s) noexcept {
  char text[INET6_ADDRSTRLEN];  // the longest form, "ffff:(6 groups):255.255.255.255", and a NUL
  if (s.empty() || s.size() >= sizeof(text)) return false;
  std::memcpy(text, s.data(), s.size());
  text[s.size()] = '\0';
  in6_addr address;
  return inet_pton(AF_INET6, text, &address) == 1;
}

// IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ) (RFC 3986 §3.2.2).
bool is_ipv_future(std::string_view s) noexcept {
  if (s.size() < 4 || (s[0] != 'v' && s[0] != 'V')) return false;
  const std::size_t dot = detail::find_not_in_class(s.data(), 1, s.size(), detail::kHexDigit);
  if (dot == 1 || dot + 1 >= s.size() || s[dot] != '.') return false;
  return std::all_of(s.begin() + static_cast<std::ptrdiff_t>(dot) + 1, s.end(),
                     [](char c) { return has_class(c, detail::kHostChar) || c == ':'; });
}

// Host = uri-host [ ":" port ] (RFC 9112 §3.2; RFC 3986 §3.2.2-3.2.3), OWS already trimmed. An
// empty value is valid (RFC 9112 §3.2: a target without an authority). Two choices stricter than
// RFC 3986's grammar, both forms no correct client sends: a ":" port needs a host before it (RFC
// 9110 §4.2.1 rejects an http URI with an empty host), and digits after it (RFC 3986 allows an
// empty port but says to omit its ":", and a proxy and a server could read "h:" differently).
// A port is at most 65535, leading zeros allowed.
bool is_valid_host(std::string_view v) noexcept {
  const char* p = v.data();
  const std::size_t n = v.size();
  if (n == 0) return true;
  std::size_t i = 0;
  if (p[0] == '[') {
    // IP-literal = "[" ( IPv6address / IPvFuture ) "]"
    const std::size_t close = v.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view literal = v.substr(1, close - 1);
    const bool future = !literal.empty() && (literal[0] == 'v' || literal[0] == 'V');
    if (!(future ? is_ipv_future(literal) : is_ipv6_address(literal))) return false;
    i = close + 1;
  } else {
    // reg-name = *( unreserved / pct-encoded / sub-delims ); an IPv4address is one as well.
    i = detail::find_not_in_class(p, 0, n, detail::kHostChar);
    while (i + 2 < n && p[i] == '%' && has_class(p[i + 1], detail::kHexDigit) &&
           has_class(p[i + 2], detail::kHexDigit)) {
      i = detail::find_not_in_class(p, i + 3, n, detail::kHostChar);
    }
    if (i == 0) return false;
  }
  if (i == n) return true;
  if (p[i] != ':' || i + 1 == n) return false;
  std::uint32_t port = 0;
  for (++i; i < n; ++i) {
    if (p[i] < '0' || p[i] > '9') return false;
    port = port * 10 + static_cast<std::uint32_t>(p[i] - '0');
    if (port > 65535) return false;
  }
  return true;
}

// a[0, n) == b[0, n), in 8-byte words (the last one overlapping the one before) that stay
// inside both ranges: a remembered host name is compared without a memcmp call.
bool same_bytes(const char* a, const char* b, std::size_t n) noexcept {
  auto word = [](const char* p) {
    std::uint64_t w;
    std::memcpy(&w, p, sizeof w);
    return w;
  };
  if (n >= 8) {
    std::uint64_t diff = word(a + n - 8) ^ word(b + n - 8);
    for (std::size_t i = 0; i + 8 < n; i += 8) diff |= word(a + i) ^ word(b + i);
    return diff == 0;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

HttpParser::FramingFields HttpParser::framing_fields(const HttpHeaders& headers) noexcept {
  FramingFields framing;
  for (std::size_t i = 0; i < headers.size(); ++i) {
    switch (headers.id_at(i)) {
      case HeaderId::kHost:
        ++framing.hosts;
        framing.host = i;
        break;
      case HeaderId::kTransferEncoding:
        framing.has_te = true;
        break;
      case HeaderId::kContentLength:
        framing.has_cl = true;
        break;
      default:
        break;
    }
  }
  return framing;
}

HttpParser::Event HttpParser::parse_head(ByteBuf& in, const HeadScan& scan) {
  // The heads are default-initialised locals moved into the event: emplace<T>() would
  // value-initialise, zeroing the whole head (its inline header block too) before filling it.
  if (kind_ == Kind::kRequest) {
    HttpRequest request;
    parse_request_head_into(in, scan,
                            {request.method, request.target, request.version, request.headers});
    return Event(std::in_place_type<HttpRequest>, std::move(request));
  }
  const std::string_view head(reinterpret_cast<const char*>(in.readable_span().data()),
                              scan.length);
  HttpResponse response;
  parse_status_line(head.substr(0, scan.first_line_end - 2), response);
  parse_fields(head.substr(scan.first_line_end, scan.length - scan.first_line_end - 2),
               scan.lines - 1, response.headers, in.readable_bytes() - scan.first_line_end);
  frame_response_body(response);
  in.skip_bytes(scan.length);
  consumed_ += static_cast<std::int64_t>(scan.length);
  return Event(std::in_place_type<HttpResponse>, std::move(response));
}

void HttpParser::parse_request_head_into(ByteBuf& in, const HeadScan& scan,
                                         RequestHeadParts parts) {
  const std::string_view head(reinterpret_cast<const char*>(in.readable_span().data()),
                              scan.length);
  // How far past the head the scans may read (ignoring what they find there): to the end of the
  // storage when this handle alone holds it, else to the end of the readable bytes.
  const std::size_t readable =
      in.readable_bytes() + (in.ref_count() == 1 ? in.writable_bytes() : std::size_t{0});
  // The first line without its CRLF; the field lines, each with its CRLF, without the blank line.
  parse_request_line(head.substr(0, scan.first_line_end - 2), readable, parts);
  parse_fields(head.substr(scan.first_line_end, scan.length - scan.first_line_end - 2),
               scan.lines - 1, parts.headers, readable - scan.first_line_end);
  frame_request_body(parts.version, parts.headers);
  in.skip_bytes(scan.length);
  consumed_ += static_cast<std::int64_t>(scan.length);
}

// request-line = method SP request-target SP HTTP-version (RFC 9112 §3).
void HttpParser::parse_request_line(std::string_view line, std::size_t readable,
                                    RequestHeadParts& request) {
  const char* p = line.data();
  detail::RequestLineParts parts;
  if (!detail::split_request_line(p, line.size(), readable, parts)) reject_request_line(line);
  const std::size_t sp1 = parts.method_end;
  const std::size_t sp2 = parts.target_end;
  // GET is recognised without the token scan and the lookup.
  request.method = parts.get ? HttpMethod::kGet : HttpMethod::of(line.substr(0, sp1));
  // clear + append: assign() goes through the general _M_replace (it must allow for aliasing),
  // ~40 instructions more for a short target.
  request.target.clear();
  request.target.append(p + sp1 + 1, sp2 - sp1 - 1);
  request.version = parse_version(line.substr(sp2 + 1));
}

void HttpParser::reject_request_line(std::string_view line) {
  const auto sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) fail(400, "malformed request line");
  if (!is_token(line.substr(0, sp1))) fail(400, "malformed request method");
  const auto rest = line.substr(sp1 + 1);
  const auto sp2 = rest.find(' ');
  if (sp2 == std::string_view::npos || sp2 == 0) fail(400, "malformed request line");
  for (char c : rest.substr(0, sp2)) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) fail(400, "invalid character in request target");
  }
  fail(400, "malformed request line");
}

// status-line = HTTP-version SP status-code SP [ reason-phrase ] (RFC 9112 §4).
void HttpParser::parse_status_line(std::string_view line, HttpResponse& response) {
  const auto sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) fail(400, "malformed status line");
  response.version = parse_version(line.substr(0, sp1));
  const auto rest = line.substr(sp1 + 1);
  if (rest.size() < 3 ||
      !std::all_of(rest.begin(), rest.begin() + 3, [](char c) { return c >= '0' && c <= '9'; })) {
    fail(400, "malformed status code");
  }
  if (rest.size() > 3 && rest[3] != ' ') fail(400, "malformed status line");
  response.status.code =
      static_cast<std::uint16_t>((rest[0] - '0') * 100 + (rest[1] - '0') * 10 + (rest[2] - '0'));
  if (response.status.code < 100) fail(400, "status code below 100");
  if (rest.size() > 4) {
    const auto reason = rest.substr(4);
    if (!std::all_of(reason.begin(), reason.end(), is_field_char)) {
      fail(400, "invalid reason phrase");
    }
    response.status.reason.assign(reason);
  }
}

HttpVersion HttpParser::parse_version(std::string_view v) {
  if (v == "HTTP/1.1") return kHttp11;
  if (v == "HTTP/1.0") return kHttp10;
  if (v.size() == 8 && v.substr(0, 5) == "HTTP/" && v[5] >= '0' && v[5] <= '9' && v[6] == '.' &&
      v[7] >= '0' && v[7] <= '9') {
    fail(505, "HTTP version " + std::string(v.substr(5)) + " not supported");
  }
  fail(400, "malformed HTTP version");
}

// field-line = field-name ":" OWS field-value OWS (RFC 9112 §5). The block is copied into the
// headers once; each field is then an id and offsets into that copy.
void HttpParser::parse_fields(std::string_view block, std::size_t fields, HttpHeaders& headers,
                              std::size_t readable) {
  if (block.empty()) return;
  const std::uint32_t base = headers.append_block(block, fields);
  const char* p = block.data();
  const std::size_t n = block.size();
  std::size_t start = 0;
  while (start < n) {
    detail::FieldLine line;
    if (!detail::split_field_line(p, start, n, readable, line)) {
      reject_field_line(block.substr(start));
    }
    headers.push(line.id, base + static_cast<std::uint32_t>(start), line.name_length,
                 base + static_cast<std::uint32_t>(line.value), line.value_end - line.value);
    start = line.next;
  }
}

void HttpParser::reject_field_line(std::string_view rest) {
  const auto line = rest.substr(0, rest.find("\r\n"));
  if (line.empty()) fail(400, "empty header field line");
  if (is_ows(line.front())) fail(400, "obsolete line folding is not allowed");
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) fail(400, "header field without a colon");
  const auto name = line.substr(0, colon);
  if (!is_token(name)) {
    fail(400, !name.empty() && is_ows(name.back()) ? "whitespace before the colon of a header field"
                                                   : "invalid header field name");
  }
  if (!std::all_of(line.begin() + colon + 1, line.end(), is_field_char)) {
    fail(400, "invalid character in the value of header " + std::string(name));
  }
  fail(400, "malformed header field line");
}

void HttpParser::frame_request_body(HttpVersion version, const HttpHeaders& headers) {
  const auto framing = framing_fields(headers);
  if (framing.hosts > 1) fail(400, "more than one Host header");
  if (framing.hosts == 0 && version == kHttp11) fail(400, "HTTP/1.1 request without Host");
  if (framing.hosts == 1) {
    // A client names the same host in every request of a connection: the last valid value is
    // kept, and a byte-equal one needs no second look.
    const std::string_view host = headers[framing.host].value;
    const bool same =
        host.size() == valid_host_size_ && same_bytes(host.data(), valid_host_, host.size());
    if (!same) {
      if (!is_valid_host(host)) fail(400, "invalid Host header");
      if (host.size() <= sizeof valid_host_) {
        std::memcpy(valid_host_, host.data(), host.size());
        valid_host_size_ = host.size();
      }
    }
  }
  if (version == kHttp10 && framing.has_te) {
    // RFC 9112 §6.1: framing an HTTP/1.0 message by Transfer-Encoding cannot be trusted.
    fail(400, "Transfer-Encoding in an HTTP/1.0 request");
  }
  if (!framing.has_te && !framing.has_cl) {
    remaining_ = 0;  // the usual request: no body (as frame_body decides, without the call)
    state_ = State::kFixedBody;
    return;
  }
  frame_body(headers, framing, true);
}

void HttpParser::frame_response_body(const HttpResponse& response) {
  const auto code = response.status.code;
  if ((code >= 100 && code < 200) || code == 204 || code == 304 || next_bodyless_) {
    // RFC 9112 §6.3: no body whatever the framing headers say. A 1xx is followed by the real
    // response, which keeps next_bodyless_.
    remaining_ = 0;
    state_ = State::kFixedBody;
    if (code >= 200) next_bodyless_ = false;
    return;
  }
  frame_body(response.headers, framing_fields(response.headers), false);
}

void HttpParser::frame_body(const HttpHeaders& headers, const FramingFields& framing,
                            bool request) {
  if (framing.has_te) {
    if (framing.has_cl) fail(400, "both Transfer-Encoding and Content-Length");
    bool chunked = false;
    for (std::size_t i = 0; i < headers.size(); ++i) {
      if (headers.id_at(i) != HeaderId::kTransferEncoding) continue;
      for_each_element(headers[i].value, [&](std::string_view coding) {
        if (chunked) fail(400, "chunked is not the last transfer coding");
        if (!iequals(coding, "chunked")) {
          fail(501, "transfer coding " + std::string(coding) + " is not supported");
        }
        chunked = true;
      });
    }
    if (!chunked) fail(400, "empty Transfer-Encoding");
    state_ = State::kChunkSize;
    extension_bytes_ = 0;
    return;
  }
  if (framing.has_cl) {
    std::optional<std::uint64_t> length;
    for (std::size_t i = 0; i < headers.size(); ++i) {
      if (headers.id_at(i) != HeaderId::kContentLength) continue;
      bool any = false;
      for_each_element(headers[i].value, [&](std::string_view digits) {
        any = true;
        std::uint64_t v = 0;
        for (char c : digits) {
          if (c < '0' || c > '9') fail(400, "Content-Length is not a number");
          if (v > (limits_.max_content_length - static_cast<unsigned>(c - '0')) / 10) {
            fail(413, "Content-Length exceeds " + std::to_string(limits_.max_content_length));
          }
          v = v * 10 + static_cast<unsigned>(c - '0');
        }
        if (length && *length != v) fail(400, "conflicting Content-Length values");
        length = v;
      });
      if (!any) fail(400, "empty Content-Length");
    }
    remaining_ = *length;
    state_ = State::kFixedBody;
    return;
  }
  if (request) {
    remaining_ = 0;
    state_ = State::kFixedBody;
  } else {
    state_ = State::kUntilClose;  // RFC 9112 §6.3 item 8
  }
}

}  // namespace trellis::http
