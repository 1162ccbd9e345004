// Well-known header names: their canonical spellings and the case-insensitive lookup of a name's
// HeaderId (see http_headers.hpp). The lookup switches on the length and first letter, so a name
// is compared with at most one candidate.
#include <trellis/codec/http/http_headers.hpp>

#include <array>

namespace trellis::http {

namespace {

constexpr unsigned char lower(unsigned char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<unsigned char>(c + 32) : c;
}

// id when name (of the same length as lower_name) equals lower_name ignoring ASCII case, else
// kOther. lower_name holds lowercase letters and '-' only: a letter matches itself with bit 0x20
// set, anything else must match exactly.
template <std::size_t N>
HeaderId match(const char* name, const char (&lower_name)[N], HeaderId id) noexcept {
  for (std::size_t i = 0; i + 1 < N; ++i) {
    const auto k = static_cast<unsigned char>(lower_name[i]);
    const auto c = static_cast<unsigned char>(name[i]);
    if ((k >= 'a' ? (c | 0x20) : c) != k) return HeaderId::kOther;
  }
  return id;
}
}  // namespace

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(static_cast<unsigned char>(a[i])) != lower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

HeaderId header_id(std::string_view name) noexcept {
  using enum HeaderId;
  const char* s = name.data();
  // The first letter with bit 0x20 set: a cheap lowercase that match() then confirms.
  switch (name.size()) {
    case 2:
      return match(s, "te", kTe);
    case 4:
      switch (s[0] | 0x20) {
        case 'h':
          return match(s, "host", kHost);
        case 'd':
          return match(s, "date", kDate);
      }
      break;
    case 6:
      switch (s[0] | 0x20) {
        case 'a':
          return match(s, "accept", kAccept);
        case 'c':
          return match(s, "cookie", kCookie);
        case 'e':
          return match(s, "expect", kExpect);
        case 'o':
          return match(s, "origin", kOrigin);
        case 's':
          return match(s, "server", kServer);
      }
      break;
    case 7:
      switch (s[0] | 0x20) {
        case 'r':
          return match(s, "referer", kReferer);
        case 't':
          return match(s, "trailer", kTrailer);
        case 'u':
          return match(s, "upgrade", kUpgrade);
      }
      break;
    case 10:
      switch (s[0] | 0x20) {
        case 'c':
          return match(s, "connection", kConnection);
        case 'k':
          return match(s, "keep-alive", kKeepAlive);
        case 's':
          return match(s, "set-cookie", kSetCookie);
        case 'u':
          return match(s, "user-agent", kUserAgent);
      }
      break;
    case 12:
      return match(s, "content-type", kContentType);
    case 13:
      switch (s[0] | 0x20) {
        case 'a':
          return match(s, "authorization", kAuthorization);
        case 'c':
          return match(s, "cache-control", kCacheControl);
      }
      break;
    case 14:
      return match(s, "content-length", kContentLength);
    case 15:
      switch (s[7] | 0x20) {
        case 'e':
          return match(s, "accept-encoding", kAcceptEncoding);
        case 'l':
          return match(s, "accept-language", kAcceptLanguage);
      }
      break;
    case 16:
      return match(s, "content-encoding", kContentEncoding);
    case 17:
      return match(s, "transfer-encoding", kTransferEncoding);
  }
  return kOther;
}

}  // namespace trellis::http
