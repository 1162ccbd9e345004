// HttpParser, the one-pass parse of a whole request head (see http_parser.hpp). The usual
// request arrives whole in one read; scanning its lines for their ends and limits first and then
// parsing them reads every byte twice. walk_request_head reads them once, with the parse's own
// checks: a method token, a target of 0x21..0x7e, "HTTP/1.1" or "HTTP/1.0", then field lines of
// a token (or a known name), a colon and field characters, each ending in CRLF, and the blank
// line. None of those lets a CR or an LF through except as a line's CRLF, so a head it accepts
// breaks no rule of the scan either; it also stays inside the limits, so the scan and parse
// would have accepted it with the same parts. Whatever it does not accept is left to them.
#include <trellis/codec/http/http_parser.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "http_head_lines.hpp"

namespace trellis::http {

bool HttpParser::walk_request_head(const ByteBuf& in, QuickHead& head) const noexcept {
  const char* p = reinterpret_cast<const char*>(in.readable_span().data());
  const std::size_t n = in.readable_bytes();
  // How far the vector finds may read past a range (ignoring the bytes there): to the end of
  // the storage when this handle alone holds it, else to the end of the readable bytes.
  const std::size_t readable = n + (in.ref_count() == 1 ? in.writable_bytes() : std::size_t{0});
  if (n > UINT32_MAX) return false;  // the offsets below are 32-bit

  // request-line = method SP request-target SP HTTP-version CRLF, at most the line limit long
  // (without its CRLF); the finds stop there.
  const std::size_t line_to = std::min(n, limits_.max_initial_line_length);
  detail::RequestLineParts line;
  if (!detail::split_request_line(p, line_to, readable, line)) return false;
  const std::size_t sp2 = line.target_end;
  // " HTTP/1.x" ends the line inside the limit, and its CRLF is in the input.
  if (line_to - sp2 < 9 || n - sp2 < 11) return false;
  std::uint64_t version;
  std::memcpy(&version, p + sp2 + 1, 8);
  std::uint64_t http11, http10;
  std::memcpy(&http11, "HTTP/1.1", 8);
  std::memcpy(&http10, "HTTP/1.0", 8);
  if (version == http11) {
    head.version = kHttp11;
  } else if (version == http10) {
    head.version = kHttp10;
  } else {
    return false;
  }
  if (p[sp2 + 9] != '\r' || p[sp2 + 10] != '\n') return false;
  head.get = line.get;
  head.method_end = line.method_end;
  head.target_end = sp2;
  const std::size_t first = sp2 + 11;
  head.first_line_end = first;

  // field-line = field-name ":" OWS field-value OWS CRLF, then the blank line: the field lines
  // and the blank line together at most the block limit (the scan allows 2 bytes more).
  const std::size_t to = first + std::min(n - first, limits_.max_header_size);
  std::size_t count = 0;
  std::size_t s = first;
  for (;;) {
    if (to - s < 2) return false;
    if (p[s] == '\r') {
      if (p[s + 1] != '\n') return false;
      break;
    }
    detail::FieldLine field;
    if (!detail::split_field_line(p, s, to, readable, field)) return false;
    if (field.name_length > UINT16_MAX) return false;
    if (count == kQuickFields || count == limits_.max_header_count) return false;
    head.field[count++] = QuickField{static_cast<std::uint32_t>(s - first),
                                     static_cast<std::uint32_t>(field.value - first),
                                     static_cast<std::uint32_t>(field.value_end - field.value),
                                     static_cast<std::uint16_t>(field.name_length), field.id};
    s = field.next;
  }
  head.length = s + 2;
  head.fields = count;
  return true;
}

void HttpParser::fill_request_head(ByteBuf& in, const QuickHead& head, RequestHeadParts parts) {
  const char* p = reinterpret_cast<const char*>(in.readable_span().data());
  parts.method = head.get ? HttpMethod::kGet : HttpMethod::of(std::string_view(p, head.method_end));
  // clear + append: see parse_request_line.
  parts.target.clear();
  parts.target.append(p + head.method_end + 1, head.target_end - head.method_end - 1);
  parts.version = head.version;
  if (head.fields != 0) {
    const std::string_view block(p + head.first_line_end, head.length - 2 - head.first_line_end);
    const std::uint32_t base = parts.headers.append_block(block, head.fields);
    for (std::size_t i = 0; i < head.fields; ++i) {
      const QuickField& f = head.field[i];
      parts.headers.push(f.id, base + f.name, f.name_length, base + f.value, f.value_length);
    }
  }
  frame_request_body(parts.version, parts.headers);
  in.skip_bytes(head.length);
  consumed_ += static_cast<std::int64_t>(head.length);
}

}  // namespace trellis::http
