// Url::parse (see url.hpp): one pass over the text, checking the characters RFC 3986 allows.
#include <trellis/codec/http/url.hpp>

#include <charconv>
#include <string>

namespace trellis::http {

namespace {

constexpr bool is_alpha(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
constexpr bool is_hex(char c) noexcept {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// RFC 3986 reg-name characters: unreserved, sub-delims, and '%' of pct-encoded.
constexpr bool is_reg_name_char(char c) noexcept {
  if (is_alpha(c) || is_digit(c)) return true;
  switch (c) {
    case '-':
    case '.':
    case '_':
    case '~':  // unreserved
    case '!':
    case '$':
    case '&':
    case '\'':
    case '(':
    case ')':
    case '*':  // sub-delims
    case '+':
    case ',':
    case ';':
    case '=':
    case '%':
      return true;
    default:
      return false;
  }
}

bool iequals_prefix(std::string_view text, std::string_view lower_prefix) noexcept {
  if (text.size() < lower_prefix.size()) return false;
  for (std::size_t i = 0; i < lower_prefix.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower_prefix[i]) return false;
  }
  return true;
}

[[noreturn]] void refuse(std::string_view text, const char* why) {
  throw UrlError("invalid URL \"" + std::string(text.substr(0, 200)) + "\": " + why);
}

void check_pct_encoding(std::string_view text, std::string_view part) {
  for (std::size_t i = 0; i < part.size(); ++i) {
    if (part[i] != '%') continue;
    if (i + 2 >= part.size()) refuse(text, "truncated percent-encoding");
    if (!is_hex(part[i + 1]) || !is_hex(part[i + 2])) refuse(text, "bad percent-encoding");
  }
}

}  // namespace

Url Url::parse(std::string_view text) {
  constexpr std::string_view kHttp = "http://";
  constexpr std::string_view kHttps = "https://";
  const bool https = iequals_prefix(text, kHttps);
  if (!https && !iequals_prefix(text, kHttp))
    refuse(text, "only http:// and https:// URLs are supported");
  const std::string_view rest = text.substr(https ? kHttps.size() : kHttp.size());
  const std::size_t authority_end = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, authority_end);
  const std::string_view tail =
      authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);

  if (authority.find('@') != std::string_view::npos) {
    refuse(text, "userinfo (user:password@) is not accepted");
  }
  Url url;
  url.https = https;
  url.port = https ? kDefaultHttpsPort : kDefaultHttpPort;
  std::string_view host;
  std::string_view port_text;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) refuse(text, "unterminated IPv6 literal");
    host = authority.substr(1, close - 1);
    if (host.empty()) refuse(text, "empty IPv6 literal");
    int colons = 0;
    for (char c : host) {
      if (c == ':') {
        ++colons;
      } else if (!is_hex(c) && c != '.') {
        refuse(text, "bad character in IPv6 literal");
      }
    }
    if (colons < 2) refuse(text, "bad IPv6 literal");
    url.ipv6 = true;
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') refuse(text, "garbage after IPv6 literal");
      has_port = true;
      port_text = after.substr(1);
    }
  } else {
    const std::size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      has_port = true;
      port_text = authority.substr(colon + 1);
    }
    if (host.empty()) refuse(text, "empty host");
    for (char c : host) {
      if (!is_reg_name_char(c)) refuse(text, "bad character in host");
    }
    check_pct_encoding(text, host);
  }
  if (has_port && !port_text.empty()) {
    if (port_text.size() > 5) refuse(text, "port out of range");
    unsigned port = 0;
    for (char c : port_text) {
      if (!is_digit(c)) refuse(text, "port is not a number");
      port = port * 10 + static_cast<unsigned>(c - '0');
    }
    if (port == 0 || port > 65535) refuse(text, "port out of range");
    url.port = static_cast<std::uint16_t>(port);
  }

  std::string_view target = tail.substr(0, tail.find('#'));
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      refuse(text, "whitespace or control character in path or query");
    }
  }
  check_pct_encoding(text, target);
  const bool needs_slash = target.empty() || target.front() == '?';
  url.target.reserve(target.size() + (needs_slash ? 1 : 0));
  if (needs_slash) url.target.push_back('/');
  url.target.append(target);
  url.host.assign(host);
  return url;
}

std::string Url::host_header() const {
  char digits[8];
  const std::size_t port_size =
      port != default_port() ? static_cast<std::size_t>(
                                   std::to_chars(digits, digits + sizeof digits, port).ptr - digits)
                             : 0;
  std::string out;
  // Exactly the size: one that fits the small-string buffer allocates nothing.
  out.reserve((ipv6 ? 2 : 0) + host.size() + (port_size > 0 ? 1 + port_size : 0));
  if (ipv6) out.push_back('[');
  out.append(host);
  if (ipv6) out.push_back(']');
  if (port_size > 0) out.append(":").append(digits, port_size);
  return out;
}

namespace {

bool starts_with(std::string_view s, std::string_view prefix) noexcept {
  return s.substr(0, prefix.size()) == prefix;
}

// The last segment of out and the '/' before it go (RFC 3986 §5.2.4, 2C and 2D).
void remove_last_segment(std::string& out) {
  const std::size_t slash = out.rfind('/');
  out.erase(slash == std::string::npos ? 0 : slash);
}

// RFC 3986 §5.2.4: "." and ".." segments removed from a path.
std::string remove_dot_segments(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  while (!in.empty()) {
    if (starts_with(in, "../")) {
      in.remove_prefix(3);
    } else if (starts_with(in, "./")) {
      in.remove_prefix(2);
    } else if (starts_with(in, "/./")) {
      in.remove_prefix(2);
    } else if (in == "/.") {
      in = "/";
    } else if (starts_with(in, "/../")) {
      in.remove_prefix(3);
      remove_last_segment(out);
    } else if (in == "/..") {
      in = "/";
      remove_last_segment(out);
    } else if (in == "." || in == "..") {
      in = {};
    } else {
      std::size_t end = in.find('/', 1);
      if (end == std::string_view::npos) end = in.size();
      out.append(in.substr(0, end));
      in.remove_prefix(end);
    }
  }
  return out;
}

bool has_scheme(std::string_view reference) noexcept {
  // scheme ":" where scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), before any '/', '?'
  // or '#'.
  if (reference.empty() || !is_alpha(reference.front())) return false;
  for (char c : reference) {
    if (c == ':') return true;
    if (!is_alpha(c) && !is_digit(c) && c != '+' && c != '-' && c != '.') return false;
  }
  return false;
}

}  // namespace

Url Url::resolve(std::string_view reference) const {
  reference = reference.substr(0, reference.find('#'));  // the fragment is never sent
  if (has_scheme(reference)) {
    Url absolute = parse(reference);  // refuses schemes other than http and https
    const std::size_t query = absolute.target.find('?');
    std::string target = remove_dot_segments(std::string_view(absolute.target).substr(0, query));
    if (query != std::string::npos) target.append(absolute.target, query);
    absolute.target = std::move(target);
    return absolute;
  }
  if (starts_with(reference, "//")) {
    std::string text(https ? "https:" : "http:");
    text.append(reference);
    return resolve(text);
  }
  const std::size_t q = reference.find('?');
  const std::string_view ref_path = reference.substr(0, q);
  const std::string_view base_target = target;
  const std::size_t base_q = base_target.find('?');
  const std::string_view base_path = base_target.substr(0, base_q);
  std::string resolved;
  if (ref_path.empty()) {
    resolved.assign(base_path.empty() ? std::string_view("/") : base_path);
    if (q != std::string_view::npos) {
      resolved.append(reference.substr(q));
    } else if (base_q != std::string_view::npos) {
      resolved.append(base_target.substr(base_q));
    }
  } else {
    if (ref_path.front() == '/') {
      resolved = remove_dot_segments(ref_path);
    } else {
      // Merged with the base's directory (RFC 3986 §5.2.3); an empty base path is "/".
      std::string merged(base_path.empty() ? std::string_view("/")
                                           : base_path.substr(0, base_path.rfind('/') + 1));
      merged.append(ref_path);
      resolved = remove_dot_segments(merged);
    }
    if (q != std::string_view::npos) resolved.append(reference.substr(q));
  }
  if (resolved.empty() || resolved.front() != '/') resolved.insert(0, 1, '/');
  // Checked as a URL would be (characters, percent-encoding).
  std::string text(scheme_prefix());
  text.append(host_header()).append(resolved);
  return parse(text);
}

}  // namespace trellis::http
