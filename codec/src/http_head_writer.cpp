// Message head and chunk serialisation (see http_head_writer.hpp).
#include <trellis/codec/http/http_head_writer.hpp>

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>

#include "http_chars.hpp"

namespace trellis::http {

namespace {
void put_decimal(ByteBuf& out, std::uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.write_string(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
}
}  // namespace

void write_fields(ByteBuf& out, const HttpHeaders& headers) {
  for (const auto field : headers) write_field(out, field.name, field.value);
}

void write_status_line(ByteBuf& out, HttpVersion version, const HttpResponseStatus& status) {
  out.write_string(version.text());
  out.write_string(" ");
  put_decimal(out, status.code);
  out.write_string(" ");
  out.write_string(status.reason_phrase());
  out.write_string("\r\n");
}

void write_field(ByteBuf& out, std::string_view name, std::string_view value) {
  out.ensure_writable(name.size() + value.size() + 4);
  out.write_string(name);
  out.write_string(": ");
  out.write_string(value);
  out.write_string("\r\n");
}

void write_response_head(ByteBuf& out, HttpVersion version, const HttpResponseStatus& status,
                         const HttpHeaders& headers) {
  write_status_line(out, version, status);
  write_fields(out, headers);
  out.write_string("\r\n");
}

void write_request_head(ByteBuf& out, const HttpMethod& method, std::string_view target,
                        HttpVersion version, const HttpHeaders& headers) {
  out.write_string(method.name());
  out.write_string(" ");
  out.write_string(target);
  out.write_string(" ");
  out.write_string(version.text());
  out.write_string("\r\n");
  write_fields(out, headers);
  out.write_string("\r\n");
}

void write_chunk_header(ByteBuf& out, std::uint64_t size) {
  char buf[20];
  auto r = std::to_chars(buf, buf + sizeof buf, size, 16);
  out.write_string(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
  out.write_string("\r\n");
}

void write_chunk_end(ByteBuf& out) { out.write_string("\r\n"); }

void write_last_chunk(ByteBuf& out, const HttpHeaders& trailers) {
  out.write_string("0\r\n");
  write_fields(out, trailers);
  out.write_string("\r\n");
}

namespace {
// Eight characters at a time (SWAR): field values are short, and a byte loop costs ~5
// instructions per character. A byte of w is CR, LF or NUL exactly when the same byte of w, of
// w ^ CRs or of w ^ LFs is zero; (x - 0x01..) & ~x & 0x80.. is non-zero exactly when x has a zero
// byte (borrows only run upwards from a zero byte, so no zero means no false hit).
constexpr std::uint64_t kByteOnes = 0x0101010101010101ULL;
constexpr std::uint64_t kByteHighs = 0x8080808080808080ULL;
constexpr std::uint64_t zero_byte_bits(std::uint64_t x) noexcept {
  return (x - kByteOnes) & ~x & kByteHighs;
}
constexpr std::uint64_t cr_lf_nul_bits(std::uint64_t w) noexcept {
  return zero_byte_bits(w) | zero_byte_bits(w ^ (kByteOnes * '\r')) |
         zero_byte_bits(w ^ (kByteOnes * '\n'));
}
std::uint64_t load64(const char* p) noexcept {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}
std::uint64_t load32(const char* p) noexcept {
  std::uint32_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// Non-zero exactly when a byte of w is below 0x0E, as NUL, LF and CR are (and TAB, which a value
// may hold): one subtraction per word where cr_lf_nul_bits takes three tests. The same argument
// as zero_byte_bits: the lowest such byte borrows nothing and sets its bit; with none, nothing
// borrows and no byte of 0x80 or more passes ~w.
constexpr std::uint64_t below_0e_bits(std::uint64_t w) noexcept {
  return (w - kByteOnes * 0x0E) & ~w & kByteHighs;
}

bool has_cr_lf_nul(std::string_view s) noexcept {
  const char* p = s.data();
  const std::size_t n = s.size();
  if (n >= 8) {
    // Values rarely hold a control character at all: look for any first, then for the three.
    std::uint64_t low = 0;
    for (std::size_t i = 0; i + 8 <= n; i += 8) low |= below_0e_bits(load64(p + i));
    if ((low | below_0e_bits(load64(p + n - 8))) == 0) return false;
    std::uint64_t hits = 0;
    for (std::size_t i = 0; i + 8 <= n; i += 8) hits |= cr_lf_nul_bits(load64(p + i));
    return (hits | cr_lf_nul_bits(load64(p + n - 8))) != 0;  // the last (overlapping) word
  }
  std::uint64_t w;
  if (n >= 4) {
    w = load32(p) | load32(p + n - 4) << 32;  // two overlapping halves cover all n
  } else if (n > 0) {
    // p[0], p[n / 2] and p[n - 1] cover all of 1 to 3 characters; spaces fill the rest.
    w = std::uint64_t{static_cast<unsigned char>(p[0])} |
        std::uint64_t{static_cast<unsigned char>(p[n / 2])} << 8 |
        std::uint64_t{static_cast<unsigned char>(p[n - 1])} << 16 | 0x2020202020000000ULL;
  } else {
    return false;
  }
  return below_0e_bits(w) != 0 && cr_lf_nul_bits(w) != 0;
}
}  // namespace

bool is_token(std::string_view s) noexcept {
  // One table lookup per character (the parser's class table): names and methods are short.
  if (s.empty()) return false;
  for (const char c : s) {
    if (!detail::is_tchar(c)) return false;
  }
  return true;
}

bool is_request_target(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (const char c : s) {
    if (!detail::has_class(c, detail::kTargetChar)) return false;
  }
  return true;
}

bool has_unsafe_field(const HttpHeaders& headers) noexcept {
  for (std::size_t i = 0; i < headers.size(); ++i) {
    const auto field = headers[i];
    // Well-known names are our own spellings, tokens all.
    if (headers.id_at(i) == HeaderId::kOther && !is_token(field.name)) return true;
    if (has_cr_lf_nul(field.value)) return true;
  }
  return false;
}

char* put_fields(char* out, const HttpHeaders& headers, FieldsSummary& summary) noexcept {
  bool bad = false;
  for (std::size_t i = 0; i < headers.size(); ++i) {
    const auto field = headers[i];
    const HeaderId id = headers.id_at(i);
    switch (id) {
      case HeaderId::kOther:
        bad |= !is_token(field.name);  // well-known names are our own spellings
        break;
      case HeaderId::kDate:
        summary.has_date = true;
        break;
      case HeaderId::kContentLength:
        summary.has_content_length = true;
        break;
      case HeaderId::kTransferEncoding:
        summary.has_transfer_encoding = true;
        break;
      default:
        break;
    }
    bad |= has_cr_lf_nul(field.value);
    out = put_field(out, field.name, field.value);
  }
  summary.unsafe = bad;
  return out;
}

namespace {
// Every standard status line for HTTP/1.0 and HTTP/1.1, in one string.
class StatusLines {
 public:
  StatusLines() {
    for (std::uint16_t code = kFirst; code < kFirst + kCodes; ++code) {
      const auto phrase = reason_phrase(code);
      if (phrase.empty()) continue;
      for (std::uint8_t minor = 0; minor < 2; ++minor) {
        const std::size_t at = all_.size();
        all_.append(minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ");
        all_.append(std::to_string(code)).append(" ").append(phrase).append("\r\n");
        auto& slot = slots_[index(minor, code)];
        slot.offset = static_cast<std::uint16_t>(at);
        slot.length = static_cast<std::uint16_t>(all_.size() - at);
      }
    }
  }
  std::string_view find(HttpVersion version, std::uint16_t code) const noexcept {
    if (code < kFirst || code >= kFirst + kCodes || version.major != 1 || version.minor > 1) {
      return {};
    }
    const auto& slot = slots_[index(version.minor, code)];
    return std::string_view(all_.data() + slot.offset, slot.length);  // in range by construction
  }

 private:
  static constexpr std::uint16_t kFirst = 100;
  static constexpr std::uint16_t kCodes = 500;
  static std::size_t index(std::uint8_t minor, std::uint16_t code) noexcept {
    return std::size_t{minor} * kCodes + (code - kFirst);
  }
  struct Slot {
    std::uint16_t offset = 0;
    std::uint16_t length = 0;
  };
  std::string all_;
  Slot slots_[2 * kCodes];
};

// Built when the library is loaded, so a lookup needs no initialisation guard.
const StatusLines kStatusLines;
}  // namespace

std::string_view standard_status_line(HttpVersion version, std::uint16_t code) noexcept {
  return kStatusLines.find(version, code);
}

}  // namespace trellis::http
