// HttpParser, finding the end of a head or trailer section (see http_parser.hpp). The rules are
// byte by byte (scan_bytes): an LF must follow a CR and a CR precede an LF (RFC 9112 §2.2), the
// first line and the field lines have length limits, the field lines a count limit. Only CRs,
// LFs and bytes past a limit can break a rule, so the scan skips other bytes with vector
// compares, and a 64-byte window whose line breaks are all CRLF and which no limit reaches is
// handled from its LF bit mask alone (scan_window). Both paths give the same result on any input
// and any split of it: the window path hands every other case to the byte rules.
#include <trellis/codec/http/http_parser.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "http_chars.hpp"

namespace trellis::http {

namespace {
std::size_t saturating_add(std::size_t a, std::size_t b) noexcept {
  return b > SIZE_MAX - a ? SIZE_MAX : a + b;
}
}  // namespace

HttpParser::HeadScan HttpParser::scan_head(const ByteBuf& in, bool trailers) {
  const auto bytes = in.readable_span();
  const char* p = reinterpret_cast<const char*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t i = scan_pos_;
  HeadScan head;
  if (n < 64 && i < n) {
    // A short input (one small request per read is the common case) goes through the window
    // path too, from a copy padded with zeros (neither CR nor LF, so they break no rule and end
    // no line). Anything the window cannot decide, the byte rules below decide from the input.
    alignas(64) char padded[64] = {};
    std::memcpy(padded, p, n);
    std::size_t j = i;
    if (scan_window(padded, 64, 0, j, trailers, head)) {
      if (head.length != 0) return head;
      scan_pos_ = n;
      return {};
    }
  }
  while (i < n) {
    std::size_t end = n;
    if (n >= 64) {
      // The window starting at i, or the last 64 bytes when fewer remain (its bytes before i
      // were scanned already and are masked out).
      const std::size_t window = std::min(i, n - 64);
      if (scan_window(p, n, window, i, trailers, head)) {
        if (head.length != 0) return head;
        continue;
      }
      end = window + 64;
    }
    if (scan_bytes(p, n, end, i, trailers, head)) return head;
    if (i < end) break;  // stopped at a CR that ends the input
  }
  scan_pos_ = i;
  return {};
}

bool HttpParser::scan_window(const char* p, std::size_t n, std::size_t window, std::size_t& i,
                             bool trailers, HeadScan& head) {
  const std::size_t end = window + 64;
  // No byte of the window may reach a length limit. The fields of a head start after the first
  // line, so at i or later while that line is being scanned.
  const bool first_line = !trailers && lines_ == 0;
  if (first_line && end > saturating_add(line_start_, limits_.max_initial_line_length)) {
    return false;
  }
  const std::size_t fields_start = trailers ? 0 : first_line ? i : first_line_end_;
  if (end > saturating_add(fields_start, saturating_add(limits_.max_header_size, 2))) {
    return false;
  }
  // Every live LF right after a CR and every live CR right before an LF.
  const auto [cr, lf] = detail::line_breaks_64(p + window);
  const unsigned shift = static_cast<unsigned>(i - window);
  const std::uint64_t live = ~std::uint64_t{0} << shift;
  const std::uint64_t cr_before = (i > 0 && p[i - 1] == '\r') ? std::uint64_t{1} << shift : 0;
  if (((lf ^ ((cr << 1) | cr_before)) & live) != 0) return false;
  if ((cr >> 63) != 0 && (end == n || p[end] != '\n')) return false;
  for (std::uint64_t ends = lf & live; ends != 0; ends &= ends - 1) {
    if (end_line(window + static_cast<std::size_t>(std::countr_zero(ends)), trailers, head)) {
      return true;
    }
  }
  i = end;
  return true;
}

bool HttpParser::scan_bytes(const char* p, std::size_t n, std::size_t end, std::size_t& i,
                            bool trailers, HeadScan& head) {
  const std::size_t first_limit = limits_.max_initial_line_length;
  const std::size_t fields_limit = saturating_add(limits_.max_header_size, 2);  // + blank line
  while (i < end) {
    const bool first_line = !trailers && lines_ == 0;
    const std::size_t fields_start = trailers ? 0 : first_line_end_;
    // Skip to the next CR, LF, or the first byte a length limit applies to.
    const std::size_t loud = first_line ? saturating_add(line_start_, first_limit)
                                        : saturating_add(fields_start, fields_limit);
    const std::size_t quiet_end = std::min(end, loud);
    if (i < quiet_end) i = detail::find_either(p, i, quiet_end, '\r', '\n');
    if (i == end) break;
    const char c = p[i];
    if (c == '\n') {
      if (i == 0 || p[i - 1] != '\r') fail(400, "bare LF in message head");
      if (end_line(i, trailers, head)) return true;
      ++i;
      continue;
    }
    // A CR that ends the input is looked at (every rule) again with the byte after it, so that
    // any split of the input meets the rules in the same order as the whole input does.
    if (c == '\r' && i + 1 == n) return false;
    if (c == '\r') {
      if (p[i + 1] != '\n') fail(400, "bare CR in message head");
    } else if (first_line && i - line_start_ >= first_limit) {
      fail(kind_ == Kind::kRequest ? 414 : 400,
           "initial line longer than " + std::to_string(first_limit) + " bytes");
    }
    if (!first_line && i + 1 - fields_start > fields_limit) {
      fail(431, "header block larger than " + std::to_string(limits_.max_header_size) + " bytes");
    }
    ++i;
  }
  return false;
}

void HttpParser::fail_field_count() {
  fail(431, "more than " + std::to_string(limits_.max_header_count) + " header fields");
}

// The LF at index lf (after a CR) ends a line; true when that line is the blank one that ends
// the head, which is then described in head and the scan state reset.
bool HttpParser::end_line(std::size_t lf, bool trailers, HeadScan& head) {
  if (lf - 1 == line_start_) {
    head = HeadScan{lf + 1, first_line_end_, lines_};
    scan_pos_ = line_start_ = first_line_end_ = lines_ = 0;
    return true;
  }
  if (!trailers && lines_ == 0) first_line_end_ = lf + 1;
  ++lines_;
  if (lines_ - (trailers ? 0 : 1) > limits_.max_header_count) fail_field_count();
  line_start_ = lf + 1;
  return false;
}

}  // namespace trellis::http
