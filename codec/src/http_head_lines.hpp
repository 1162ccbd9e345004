// The syntax of a request line and of a field line, shared by the parse of a scanned head
// (http_parser_head.cpp) and the one-pass walk of a whole head (http_parser_quick.cpp), so that
// both take exactly the same lines. Each answers false for a line it does not take; the caller
// decides what that means (an error with its detail, or the other path).
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

#include <trellis/codec/http/http_headers.hpp>

#include "http_chars.hpp"

namespace trellis::http::detail {

// Where `method SP request-target SP` ends in a request line.
struct RequestLineParts {
  std::size_t method_end;  // the SP after the method
  std::size_t target_end;  // the SP after the target
  bool get;                // the method is GET (recognised without the token scan)
};

// method SP request-target SP (RFC 9112 §3), found in p[0, to); p[0, readable) may be read
// (readable >= to). The version after target_end is the caller's to check.
inline bool split_request_line(const char* p, std::size_t to, std::size_t readable,
                               RequestLineParts& line) noexcept {
  line.get = to > 4 && std::memcmp(p, "GET ", 4) == 0;
  std::size_t sp1 = 3;
  if (!line.get) {
    sp1 = find_not_in_class(p, 0, to, kTchar);
    if (sp1 == 0 || sp1 == to || p[sp1] != ' ') return false;
  }
  const std::size_t sp2 = find_non_target_char(p, sp1 + 1, to, readable);
  if (sp2 == sp1 + 1 || sp2 == to || p[sp2] != ' ') return false;
  line.method_end = sp1;
  line.target_end = sp2;
  return true;
}

// A field line's parts, as offsets into the same buffer.
struct FieldLine {
  std::size_t name_length;
  std::size_t value;  // the value, without the OWS around it
  std::size_t value_end;
  std::size_t next;  // after the line's CRLF
  HeaderId id;
};

// field-name ":" OWS field-value OWS CRLF (RFC 9112 §5) at p[start, to); p[0, readable) may be
// read. A well-known name is a token (header_id matched its letters); any other is checked. The
// first byte that may not be in a value must be the CR of the line's CRLF.
inline bool split_field_line(const char* p, std::size_t start, std::size_t to, std::size_t readable,
                             FieldLine& line) noexcept {
  const std::size_t colon = find_either(p, start, to, ':', '\r', readable);
  if (colon == start || colon == to || p[colon] != ':') return false;
  const HeaderId id = header_id(std::string_view(p + start, colon - start));
  if (id == HeaderId::kOther && find_not_in_class(p, start, colon, kTchar) != colon) return false;
  std::size_t value = colon + 1;
  while (value < to && is_ows(p[value])) ++value;
  const std::size_t cr = find_non_field_char(p, value, to, readable);
  if (to - cr < 2 || p[cr] != '\r' || p[cr + 1] != '\n') return false;
  std::size_t value_end = cr;
  while (value_end > value && is_ows(p[value_end - 1])) --value_end;
  line = FieldLine{colon - start, value, value_end, cr + 2, id};
  return true;
}

}  // namespace trellis::http::detail
