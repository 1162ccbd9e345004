// Character classes of HTTP/1.1 as one 256-entry table, and scans for the first byte of a range
// that leaves a class: 16 bytes at a time with SSE2 (the x86-64 baseline), byte by byte elsewhere.
// Private to the codec's HTTP parser.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

// TRELLIS_HTTP_NO_SIMD selects the scalar code on x86-64 too (to test it).
#if defined(__SSE2__) && !defined(TRELLIS_HTTP_NO_SIMD)
#include <emmintrin.h>
#define TRELLIS_HTTP_SSE2 1
#else
#define TRELLIS_HTTP_SSE2 0
#endif

namespace trellis::http::detail {

enum CharClass : std::uint8_t {
  kTchar = 1,       // token characters (RFC 9110 §5.6.2)
  kFieldChar = 2,   // field-vchar, SP, HTAB, obs-text (RFC 9110 §5.5): no other control, no DEL
  kTargetChar = 4,  // the visible ASCII of a request-target: 0x21..0x7e
  kHostChar = 8,    // unreserved / sub-delims (RFC 3986 §2.2-2.3): a reg-name but for "%" HH
  kHexDigit = 16,
};

inline constexpr std::array<std::uint8_t, 256> kCharClasses = [] {
  std::array<std::uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    bool tchar = alnum;
    for (char s : std::string_view("!#$%&'*+-.^_`|~")) tchar = tchar || c == s;
    bool reg_name = alnum;
    for (char s : std::string_view("-._~!$&'()*+,;=")) reg_name = reg_name || c == s;
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    t[c] = static_cast<std::uint8_t>((tchar ? kTchar : 0) |
                                     ((c == '\t' || (c >= 0x20 && c != 0x7f)) ? kFieldChar : 0) |
                                     ((c > 0x20 && c < 0x7f) ? kTargetChar : 0) |
                                     (reg_name ? kHostChar : 0) | (hex ? kHexDigit : 0));
  }
  return t;
}();

constexpr bool has_class(char c, CharClass cls) noexcept {
  return (kCharClasses[static_cast<unsigned char>(c)] & cls) != 0;
}
constexpr bool is_tchar(char c) noexcept { return has_class(c, kTchar); }
constexpr bool is_field_char(char c) noexcept { return has_class(c, kFieldChar); }
constexpr bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }

// The index of the first byte of p[i, to) outside cls, or to.
inline std::size_t find_not_in_class(const char* p, std::size_t i, std::size_t to,
                                     CharClass cls) noexcept {
  for (; i < to; ++i) {
    if (!has_class(p[i], cls)) return i;
  }
  return to;
}

#if TRELLIS_HTTP_SSE2
// The index of the first byte of p[i, to) whose lane is set in stop(16 bytes), or to. p[i, limit)
// is readable (limit >= to): a short range with 16 readable bytes from i is one load whose lanes
// from to on are masked off (they may hold anything); one without goes byte by byte
// (scalar_stop); the tail of a long one re-reads the last 16 bytes of the range.
template <class VectorStop, class ScalarStop>
inline std::size_t find_first(const char* p, std::size_t i, std::size_t to, std::size_t limit,
                              VectorStop stop, ScalarStop scalar_stop) noexcept {
  if (to - i < 16) {
    if (limit - i >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      // The bit at to - i (< 16) stops the search at to when no byte before it does.
      const auto mask = static_cast<unsigned>(_mm_movemask_epi8(stop(v))) | (1u << (to - i));
      return i + static_cast<std::size_t>(std::countr_zero(mask));
    }
    for (; i < to; ++i) {
      if (scalar_stop(p[i])) return i;
    }
    return to;
  }
  for (; i + 16 <= to; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const auto mask = static_cast<unsigned>(_mm_movemask_epi8(stop(v)));
    if (mask != 0) return i + static_cast<std::size_t>(std::countr_zero(mask));
  }
  if (i == to) return to;
  const std::size_t base = to - 16;  // overlaps bytes already scanned: shift their lanes out
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + base));
  const auto mask = static_cast<unsigned>(_mm_movemask_epi8(stop(v))) >> (i - base);
  return mask != 0 ? i + static_cast<std::size_t>(std::countr_zero(mask)) : to;
}
#endif

// The first byte of p[i, to) equal to a or b, or to. The finds below may read p[to, limit)
// (readable memory, its bytes ignored) to scan a short range in one step; limit defaults to to.
inline std::size_t find_either(const char* p, std::size_t i, std::size_t to, char a, char b,
                               std::size_t limit = 0) noexcept {
#if TRELLIS_HTTP_SSE2
  const __m128i va = _mm_set1_epi8(a);
  const __m128i vb = _mm_set1_epi8(b);
  return find_first(
      p, i, to, std::max(to, limit),
      [va, vb](__m128i v) { return _mm_or_si128(_mm_cmpeq_epi8(v, va), _mm_cmpeq_epi8(v, vb)); },
      [a, b](char c) { return c == a || c == b; });
#else
  (void)limit;
  for (; i < to; ++i) {
    if (p[i] == a || p[i] == b) return i;
  }
  return to;
#endif
}

// Bit k of cr (of lf) is set when byte k of the 64 at p is a CR (an LF).
struct LineBreaks {
  std::uint64_t cr;
  std::uint64_t lf;
};
inline LineBreaks line_breaks_64(const char* p) noexcept {
  LineBreaks m{0, 0};
#if TRELLIS_HTTP_SSE2
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const auto cr =
        static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\r'))));
    const auto lf =
        static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))));
    m.cr |= std::uint64_t{cr} << (16 * k);
    m.lf |= std::uint64_t{lf} << (16 * k);
  }
#else
  for (int k = 0; k < 64; ++k) {
    m.cr |= std::uint64_t{p[k] == '\r'} << k;
    m.lf |= std::uint64_t{p[k] == '\n'} << k;
  }
#endif
  return m;
}

// The first byte of p[i, to) that may not appear in a field value (a control other than HTAB,
// or DEL; CR included), or to.
inline std::size_t find_non_field_char(const char* p, std::size_t i, std::size_t to,
                                       std::size_t limit = 0) noexcept {
#if TRELLIS_HTTP_SSE2
  return find_first(
      p, i, to, std::max(to, limit),
      [](__m128i v) {
        // Unsigned v <= 0x1f: max(v, 0x1f) == 0x1f.
        const __m128i control =
            _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
        const __m128i tab = _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'));
        const __m128i del = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f));
        return _mm_or_si128(_mm_andnot_si128(tab, control), del);
      },
      [](char c) { return !is_field_char(c); });
#else
  (void)limit;
  return find_not_in_class(p, i, to, kFieldChar);
#endif
}

// The first byte of p[i, to) outside 0x21..0x7e (SP, CR, controls, DEL, non-ASCII), or to.
inline std::size_t find_non_target_char(const char* p, std::size_t i, std::size_t to,
                                        std::size_t limit = 0) noexcept {
#if TRELLIS_HTTP_SSE2
  return find_first(
      p, i, to, std::max(to, limit),
      [](__m128i v) {
        // Signed compare: bytes >= 0x80 are negative, so below 0x21 too.
        return _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x21)),
                            _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
      },
      [](char c) { return !has_class(c, kTargetChar); });
#else
  (void)limit;
  return find_not_in_class(p, i, to, kTargetChar);
#endif
}

}  // namespace trellis::http::detail
