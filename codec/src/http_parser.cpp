// The strict incremental HTTP/1.1 parser (see http_parser.hpp). RFC 9112 references in comments.
#include <trellis/codec/http/http_parser.hpp>

#include <algorithm>
#include <string_view>

namespace trellis::http {

namespace {

// tchar (RFC 9110 §5.6.2).
constexpr bool is_tchar(unsigned char c) noexcept {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool is_token(std::string_view s) noexcept {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](char c) { return is_tchar(static_cast<unsigned char>(c)); });
}

// field-vchar / SP / HTAB, obs-text allowed (RFC 9110 §5.5); no NUL, CR, LF or other controls.
constexpr bool is_field_char(unsigned char c) noexcept {
  return c == '\t' || (c >= 0x20 && c != 0x7f);
}

constexpr bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }

std::string_view trim_ows(std::string_view s) noexcept {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string_view as_chars(std::span<const std::byte> bytes) noexcept {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
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

}  // namespace

HttpParser::HttpParser(Kind kind, HttpParserLimits limits) : kind_(kind), limits_(limits) {}

void HttpParser::reset() noexcept {
  state_ = State::kStart;
  remaining_ = 0;
  scan_pos_ = line_start_ = first_line_end_ = lines_ = 0;
}

void HttpParser::fail(std::uint16_t status, const std::string& what) {
  state_ = State::kFailed;
  throw HttpParseError(status, what, consumed_);
}

std::size_t HttpParser::scan_head(const ByteBuf& in, bool trailers) {
  const auto text = as_chars(in.readable_span());
  const std::size_t first_limit = limits_.max_initial_line_length;
  const std::size_t fields_limit = limits_.max_header_size + 2;  // + the blank line
  for (std::size_t i = scan_pos_; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      if (i == 0 || text[i - 1] != '\r') fail(400, "bare LF in message head");
      if (i - 1 == line_start_) {  // the blank line: end of the head
        std::size_t length = i + 1;
        scan_pos_ = line_start_ = first_line_end_ = lines_ = 0;
        return length;
      }
      if (!trailers && lines_ == 0) first_line_end_ = i + 1;
      ++lines_;
      if (lines_ - (trailers ? 0 : 1) > limits_.max_header_count) {
        fail(431, "more than " + std::to_string(limits_.max_header_count) + " header fields");
      }
      line_start_ = i + 1;
      continue;
    }
    if (c == '\r') {
      if (i + 1 < text.size() && text[i + 1] != '\n') fail(400, "bare CR in message head");
    } else if (!trailers && lines_ == 0 && i - line_start_ >= first_limit) {
      fail(kind_ == Kind::kRequest ? 414 : 400,
           "initial line longer than " + std::to_string(first_limit) + " bytes");
    }
    const std::size_t fields_start = trailers ? 0 : first_line_end_;
    if ((trailers || lines_ > 0) && i + 1 - fields_start > fields_limit) {
      fail(431, "header block larger than " + std::to_string(limits_.max_header_size) + " bytes");
    }
  }
  scan_pos_ = text.size();
  return 0;
}

HttpParser::Event HttpParser::parse(ByteBuf& in) {
  for (;;) {
    switch (state_) {
      case State::kFailed:
        throw HttpParseError(400, "the parser failed earlier", consumed_);

      case State::kStart: {
        if (scan_pos_ == 0) {
          // RFC 9112 §2.2: empty lines before a request line (or status line) are ignored.
          while (in.readable_bytes() >= 2 && in.get_u8(in.reader_index()) == '\r' &&
                 in.get_u8(in.reader_index() + 1) == '\n') {
            in.skip_bytes(2);
            consumed_ += 2;
          }
          if (in.readable_bytes() >= 1 && in.get_u8(in.reader_index()) == '\n') {
            fail(400, "bare LF before message head");
          }
          // A lone CR may be the start of one more empty line: wait for the next byte.
          if (in.readable_bytes() == 1 && in.get_u8(in.reader_index()) == '\r') {
            return std::monostate{};
          }
        }
        if (!in.is_readable()) return std::monostate{};
        std::size_t length = scan_head(in, false);
        if (length == 0) return std::monostate{};
        return parse_head(in, length);
      }

      case State::kFixedBody:
        return body_piece(in, remaining_, true);

      case State::kChunkSize: {
        auto event = parse_chunk_size(in);
        if (state_ == State::kChunkSize) return event;  // more input needed
        continue;
      }

      case State::kChunkData:
        return body_piece(in, remaining_, false);

      case State::kChunkDataEnd: {
        if (in.readable_bytes() < 2) return std::monostate{};
        if (in.get_u8(in.reader_index()) != '\r' || in.get_u8(in.reader_index() + 1) != '\n') {
          fail(400, "chunk data not followed by CRLF");
        }
        in.skip_bytes(2);
        consumed_ += 2;
        state_ = State::kChunkSize;
        continue;
      }

      case State::kTrailers: {
        if (in.readable_bytes() < 2) return std::monostate{};
        LastHttpContent last;
        if (in.get_u8(in.reader_index()) == '\r' && in.get_u8(in.reader_index() + 1) == '\n') {
          in.skip_bytes(2);
          consumed_ += 2;
        } else {
          std::size_t length = scan_head(in, true);
          if (length == 0) return std::monostate{};
          auto block = as_chars(in.readable_span()).substr(0, length - 2);
          parse_fields(block, last.trailers.mutate());
          in.skip_bytes(length);
          consumed_ += static_cast<std::int64_t>(length);
        }
        state_ = State::kStart;
        next_bodyless_ = false;
        return last;
      }

      case State::kUntilClose: {
        if (!in.is_readable()) return std::monostate{};
        auto n = in.readable_bytes();
        consumed_ += static_cast<std::int64_t>(n);
        return HttpContent{in.read_slice(n)};
      }
    }
  }
}

HttpParser::Event HttpParser::finish(ByteBuf& in) {
  switch (state_) {
    case State::kStart:
      if (scan_pos_ == 0 && !in.is_readable()) return std::monostate{};
      fail(400, "connection closed in the middle of a message head");
    case State::kUntilClose: {
      LastHttpContent last;
      if (in.is_readable()) last.content = in.read_slice(in.readable_bytes());
      state_ = State::kStart;
      next_bodyless_ = false;
      return last;
    }
    case State::kFailed:
      return std::monostate{};
    default:
      fail(400, "connection closed in the middle of a message body");
  }
}

HttpParser::Event HttpParser::parse_head(ByteBuf& in, std::size_t length) {
  const auto head = as_chars(in.readable_span()).substr(0, length);
  // scan_head reset first_line_end_; find the first line again (it is short).
  const auto first_end = head.find("\r\n");
  const auto line = head.substr(0, first_end);
  // The field lines, each with its CRLF, without the blank line that ends the head.
  const auto fields = head.substr(first_end + 2, length - first_end - 4);
  const auto version_of = [this](std::string_view v) -> HttpVersion {
    if (v == "HTTP/1.1") return kHttp11;
    if (v == "HTTP/1.0") return kHttp10;
    if (v.size() == 8 && v.substr(0, 5) == "HTTP/" && v[5] >= '0' && v[5] <= '9' && v[6] == '.' &&
        v[7] >= '0' && v[7] <= '9') {
      fail(505, "HTTP version " + std::string(v.substr(5)) + " not supported");
    }
    fail(400, "malformed HTTP version");
  };

  Event event;
  if (kind_ == Kind::kRequest) {
    HttpRequest request;
    const auto sp1 = line.find(' ');
    if (sp1 == std::string_view::npos || sp1 == 0) fail(400, "malformed request line");
    const auto method = line.substr(0, sp1);
    if (!is_token(method)) fail(400, "malformed request method");
    const auto rest = line.substr(sp1 + 1);
    const auto sp2 = rest.find(' ');
    if (sp2 == std::string_view::npos || sp2 == 0) fail(400, "malformed request line");
    const auto target = rest.substr(0, sp2);
    for (char c : target) {
      auto u = static_cast<unsigned char>(c);
      if (u <= 0x20 || u >= 0x7f) fail(400, "invalid character in request target");
    }
    request.method = HttpMethod::of(method);
    request.target.assign(target);
    request.version = version_of(rest.substr(sp2 + 1));
    request.headers.reserve(fields.size(), 16);
    parse_fields(fields, request.headers);
    frame_request_body(request);
    event = std::move(request);
  } else {
    HttpResponse response;
    const auto sp1 = line.find(' ');
    if (sp1 == std::string_view::npos) fail(400, "malformed status line");
    response.version = version_of(line.substr(0, sp1));
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
      for (char c : reason) {
        if (!is_field_char(static_cast<unsigned char>(c))) fail(400, "invalid reason phrase");
      }
      response.status.reason.assign(reason);
    }
    response.headers.reserve(fields.size(), 16);
    parse_fields(fields, response.headers);
    frame_response_body(response);
    event = std::move(response);
  }
  in.skip_bytes(length);
  consumed_ += static_cast<std::int64_t>(length);
  return event;
}

void HttpParser::parse_fields(std::string_view block, HttpHeaders& headers) {
  // block holds field lines, each ending in CRLF (the blank line is not part of it).
  while (!block.empty()) {
    const auto end = block.find("\r\n");
    const auto line = block.substr(0, end);
    if (line.empty()) fail(400, "empty header field line");
    if (is_ows(line.front())) fail(400, "obsolete line folding is not allowed");
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) fail(400, "header field without a colon");
    const auto name = line.substr(0, colon);
    if (!is_token(name)) {
      fail(400, is_ows(name.back()) ? "whitespace before the colon of a header field"
                                    : "invalid header field name");
    }
    const auto value = trim_ows(line.substr(colon + 1));
    for (char c : value) {
      if (!is_field_char(static_cast<unsigned char>(c))) {
        fail(400, "invalid character in the value of header " + std::string(name));
      }
    }
    headers.add(name, value);
    block.remove_prefix(end == std::string_view::npos ? block.size() : end + 2);
  }
}

void HttpParser::frame_request_body(const HttpRequest& request) {
  const auto hosts = request.headers.count(HeaderId::kHost);
  if (hosts > 1) fail(400, "more than one Host header");
  if (hosts == 0 && request.version == kHttp11) fail(400, "HTTP/1.1 request without Host");
  if (request.version == kHttp10 && request.headers.contains(HeaderId::kTransferEncoding)) {
    // RFC 9112 §6.1: framing an HTTP/1.0 message by Transfer-Encoding cannot be trusted.
    fail(400, "Transfer-Encoding in an HTTP/1.0 request");
  }
  frame_body(request.headers, true);
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
  frame_body(response.headers, false);
}

void HttpParser::frame_body(const HttpHeaders& headers, bool request) {
  const bool has_te = headers.contains(HeaderId::kTransferEncoding);
  const bool has_cl = headers.contains(HeaderId::kContentLength);
  if (has_te) {
    if (has_cl) fail(400, "both Transfer-Encoding and Content-Length");
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
    return;
  }
  if (has_cl) {
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

HttpParser::Event HttpParser::parse_chunk_size(ByteBuf& in) {
  const auto text = as_chars(in.readable_span());
  const std::size_t limit = 16 + 2 + limits_.max_chunk_extension_length + 2;
  const auto lf = text.substr(0, std::min(text.size(), limit)).find('\n');
  if (lf == std::string_view::npos) {
    if (text.size() >= limit) fail(400, "chunk size line too long");
    return std::monostate{};
  }
  if (lf == 0 || text[lf - 1] != '\r') fail(400, "bare LF in chunk size line");
  const auto line = text.substr(0, lf - 1);
  std::size_t i = 0;
  std::uint64_t size = 0;
  for (; i < line.size(); ++i) {
    int d = hex_value(line[i]);
    if (d < 0) break;
    size = size * 16 + static_cast<unsigned>(d);
    if (size > limits_.max_chunk_size) {
      fail(413, "chunk larger than " + std::to_string(limits_.max_chunk_size) + " bytes");
    }
  }
  if (i == 0) fail(400, "chunk size is not a hexadecimal number");
  auto ext = line.substr(i);
  if (!ext.empty()) {
    // RFC 9112 §7.1.1: chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] ).
    if (trim_ows(ext).front() != ';') fail(400, "malformed chunk extension");
    if (ext.size() > limits_.max_chunk_extension_length) fail(400, "chunk extension too long");
    for (char c : ext) {
      if (!is_field_char(static_cast<unsigned char>(c))) fail(400, "invalid chunk extension");
    }
  }
  in.skip_bytes(lf + 1);
  consumed_ += static_cast<std::int64_t>(lf + 1);
  if (size == 0) {
    state_ = State::kTrailers;
  } else {
    remaining_ = size;
    state_ = State::kChunkData;
  }
  return std::monostate{};
}

HttpParser::Event HttpParser::body_piece(ByteBuf& in, std::uint64_t remaining,
                                         bool completes_message) {
  if (remaining == 0 && completes_message) {
    state_ = State::kStart;
    return LastHttpContent{};
  }
  const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(in.readable_bytes(), remaining));
  if (n == 0) return std::monostate{};
  auto piece = in.read_slice(n);
  consumed_ += static_cast<std::int64_t>(n);
  remaining_ -= n;
  if (remaining_ > 0) return HttpContent{std::move(piece)};
  if (completes_message) {
    state_ = State::kStart;
    return LastHttpContent{std::move(piece), {}};
  }
  state_ = State::kChunkDataEnd;
  return HttpContent{std::move(piece)};
}

}  // namespace trellis::http
