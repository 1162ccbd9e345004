#include <trellis/codec/http2/http2_header_validation.hpp>

#include <array>

namespace trellis::http2 {

namespace {

// RFC 9110 §5.6.2 tchar, lower case only (upper case letters are malformed in HTTP/2).
constexpr std::array<bool, 256> make_token_table() {
  std::array<bool, 256> t{};
  for (char c : std::string_view("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")) {
    t[static_cast<unsigned char>(c)] = true;
  }
  return t;
}
constexpr std::array<bool, 256> kToken = make_token_table();

std::optional<std::string_view> check_field(std::string_view name, std::string_view value) {
  if (name.empty()) return "an empty field name";
  for (char c : name) {
    if (!kToken[static_cast<unsigned char>(c)]) {
      return c >= 'A' && c <= 'Z' ? std::string_view("an upper case field name")
                                  : std::string_view("a field name with an invalid character");
    }
  }
  for (char c : value) {
    if (c == '\0' || c == '\r' || c == '\n') return "a field value with NUL, CR or LF";
  }
  if (!value.empty() && (value.front() == ' ' || value.front() == '\t' || value.back() == ' ' ||
                         value.back() == '\t')) {
    return "a field value with leading or trailing white space";
  }
  if (name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
      name == "transfer-encoding" || name == "upgrade") {
    return "a connection-specific field";
  }
  if (name == "te" && value != "trailers") return "te other than trailers";
  return std::nullopt;
}

}  // namespace

std::optional<std::string_view> validate_request_headers(const Http2Headers& headers) noexcept {
  bool method = false, scheme = false, path = false, authority = false, connect = false;
  bool path_empty = false;
  for (std::size_t i = 0; i < headers.size(); ++i) {
    const auto f = headers[i];
    if (!f.name.empty() && f.name.front() == ':') {
      if (i >= headers.pseudo_header_count()) return "a pseudo-header after a regular field";
      bool* seen = nullptr;
      if (f.name == ":method") {
        seen = &method;
        connect = f.value == "CONNECT";
        if (f.value.empty()) return "an empty :method";
      } else if (f.name == ":scheme") {
        seen = &scheme;
      } else if (f.name == ":path") {
        seen = &path;
        path_empty = f.value.empty();
      } else if (f.name == ":authority") {
        seen = &authority;
      } else {
        return "an unknown or response pseudo-header";
      }
      if (*seen) return "a pseudo-header twice";
      *seen = true;
      continue;
    }
    if (auto why = check_field(f.name, f.value)) return why;
  }
  if (!method) return "no :method";
  if (connect) {
    if (scheme || path) return "CONNECT with :scheme or :path";
    if (!authority) return "CONNECT without :authority";
  } else {
    if (!scheme) return "no :scheme";
    if (!path) return "no :path";
    if (path_empty) return "an empty :path";
  }
  if (content_length_of(headers) == -1) return "an invalid content-length";
  return std::nullopt;
}

std::optional<std::string_view> validate_trailers(const Http2Headers& headers) noexcept {
  for (std::size_t i = 0; i < headers.size(); ++i) {
    const auto f = headers[i];
    if (!f.name.empty() && f.name.front() == ':') return "a pseudo-header in trailers";
    if (auto why = check_field(f.name, f.value)) return why;
  }
  return std::nullopt;
}

std::optional<std::int64_t> content_length_of(const Http2Headers& headers) noexcept {
  std::optional<std::int64_t> result;
  for (std::size_t i = headers.pseudo_header_count(); i < headers.size(); ++i) {
    const auto f = headers[i];
    if (f.name != "content-length") continue;
    if (f.value.empty() || f.value.size() > 18) return -1;
    std::int64_t v = 0;
    for (char c : f.value) {
      if (c < '0' || c > '9') return -1;
      v = v * 10 + (c - '0');
    }
    if (result && *result != v) return -1;
    result = v;
  }
  return result;
}

}  // namespace trellis::http2
