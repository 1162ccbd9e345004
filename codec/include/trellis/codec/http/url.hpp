// Url: an http:// or https:// URL split into what a client needs to send a request: host, port and
// the request target. Parsed without regex and without allocating beyond the two strings it keeps.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <trellis/pipeline/error.hpp>

namespace trellis::http {

/// A URL that Url::parse refuses: what is wrong with it is in what().
class UrlError : public InvalidArgumentError {
 public:
  using InvalidArgumentError::InvalidArgumentError;
};

/// An http:// or https:// URL split into what a client needs to send a request: host, port and
/// the request target. A value type.
struct Url {
  /// The default port of http.
  static constexpr std::uint16_t kDefaultHttpPort = 80;
  /// The default port of https.
  static constexpr std::uint16_t kDefaultHttpsPort = 443;

  /// The host as written, without the brackets of an IPv6 literal ("::1" for "http://[::1]/").
  std::string host;
  /// The port given, or the scheme's default.
  std::uint16_t port = kDefaultHttpPort;
  /// The request target in origin form: the path and the query, "/" when the URL has no path.
  /// Percent-encoding is kept as written; the fragment is dropped (it is never sent).
  std::string target;
  bool ipv6 = false;   ///< host is an IPv6 literal
  bool https = false;  ///< the scheme is https: the connection runs TLS

  /// Parses "http[s]://host[:port][/path][?query][#fragment]" (scheme case-insensitive). Refused
  /// with UrlError: other schemes, userinfo ("user:pw@"), an empty or malformed host, a port
  /// outside 1..65535, whitespace or control characters.
  static Url parse(std::string_view text);

  /// The URL a reference found in this one's document or Location header points to, resolved
  /// as RFC 3986 §5.2 says: an absolute http(s) URL, a network-path reference ("//host/p"), an
  /// absolute path, a relative path ("g", "./g", "../g", merged with this URL's directory and
  /// its dot segments removed), a query alone ("?y", on this path) or nothing but a fragment
  /// (this URL). The fragment is dropped. Throws UrlError as parse() does (another scheme, bad
  /// characters).
  Url resolve(std::string_view reference) const;
  /// The value of the Host header: host, bracketed when IPv6, and ":port" unless the default.
  std::string host_header() const;
  /// "http://" or "https://".
  std::string_view scheme_prefix() const noexcept { return https ? "https://" : "http://"; }
  /// The scheme's default port: 80 or 443.
  std::uint16_t default_port() const noexcept {
    return https ? kDefaultHttpsPort : kDefaultHttpPort;
  }
  /// Equal when every part is.
  bool operator==(const Url&) const = default;
};

}  // namespace trellis::http
