// The strict incremental HTTP/1.1 parser (see http_parser.hpp): the message state machine, chunk
// framing and body pieces. The end of a head is found in http_parser_scan.cpp and its lines are
// parsed in http_parser_head.cpp. RFC 9112 references in comments.
#include <trellis/codec/http/http_parser.hpp>

#include <algorithm>
#include <string_view>

#include "http_chars.hpp"

namespace trellis::http {

namespace {

using detail::is_field_char;
using detail::is_ows;

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

}  // namespace

HttpParser::HttpParser(Kind kind, HttpParserLimits limits) : kind_(kind), limits_(limits) {}

void HttpParser::reset() noexcept {
  state_ = State::kStart;
  remaining_ = 0;
  extension_bytes_ = 0;
  scan_pos_ = line_start_ = first_line_end_ = lines_ = 0;
}

void HttpParser::fail(std::uint16_t status, const std::string& what) {
  state_ = State::kFailed;
  throw HttpParseError(status, what, consumed_);
}

HttpParser::HeadScan HttpParser::scan_message_start(ByteBuf& in) {
  if (state_ == State::kFailed) throw HttpParseError(400, "the parser failed earlier", consumed_);
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
    if (in.readable_bytes() == 1 && in.get_u8(in.reader_index()) == '\r') return {};
  }
  if (!in.is_readable()) return {};
  return scan_head(in, false);
}

HttpParser::Event HttpParser::parse(ByteBuf& in) {
  for (;;) {
    switch (state_) {
      case State::kFailed:
        throw HttpParseError(400, "the parser failed earlier", consumed_);

      case State::kStart: {
        if (kind_ == Kind::kRequest && at_fresh_start()) {
          QuickHead quick;
          if (walk_request_head(in, quick)) {
            HttpRequest request;  // default-initialised, as in parse_head
            fill_request_head(in, quick,
                              {request.method, request.target, request.version, request.headers});
            return Event(std::in_place_type<HttpRequest>, std::move(request));
          }
        }
        const HeadScan scan = scan_message_start(in);
        if (scan.length == 0) return std::monostate{};
        return parse_head(in, scan);
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
          const HeadScan scan = scan_head(in, true);
          if (scan.length == 0) return std::monostate{};
          auto block = as_chars(in.readable_span()).substr(0, scan.length - 2);
          parse_fields(block, scan.lines, last.trailers.mutate());
          in.skip_bytes(scan.length);
          consumed_ += static_cast<std::int64_t>(scan.length);
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
    const auto trimmed = trim_ows(ext);
    if (trimmed.empty() || trimmed.front() != ';') fail(400, "malformed chunk extension");
    if (ext.size() > limits_.max_chunk_extension_length) fail(400, "chunk extension too long");
    extension_bytes_ += ext.size();
    if (extension_bytes_ > limits_.max_chunk_extensions_per_message) {
      fail(400, "chunk extensions of the message longer than " +
                    std::to_string(limits_.max_chunk_extensions_per_message) + " bytes");
    }
    for (char c : ext) {
      if (!is_field_char(c)) fail(400, "invalid chunk extension");
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
