// SocketAddress: a channel's local or remote address as a plain value (IPv4, IPv6, Unix-domain
// path, or a named in-process address for embedded channels), convertible to a sockaddr for the
// transport without bringing Asio into the pipeline layer.
//
// Compact (a connection holds two): an IPv4 or IPv6 sockaddr is stored inline; any other
// (Unix-domain, or an unknown family the OS reported) sits in an immutable heap block that
// copies share.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace trellis {

/// A channel's local or remote address as a plain value (IPv4, IPv6, Unix-domain path, or a
/// named in-process address for embedded channels), convertible to a sockaddr for the
/// transport. Copies are cheap (a Unix-domain address shares its heap block).
///
/// Threading: an immutable value; const use from any thread.
class SocketAddress {
 public:
  /// What the address is.
  enum class Kind {
    kNone,     ///< No address (default-constructed).
    kIpv4,     ///< An IPv4 address and port.
    kIpv6,     ///< An IPv6 address and port.
    kUnix,     ///< A Unix-domain socket path (or another family the OS reported).
    kEmbedded  ///< A named in-process address, without a socket.
  };

  /// No address (kind() is Kind::kNone).
  SocketAddress() noexcept;
  /// From a numeric IPv4 or IPv6 address; throws InvalidArgumentError for anything else.
  static SocketAddress from_ip(std::string_view ip, std::uint16_t port);
  /// A Unix-domain socket path.
  static SocketAddress from_unix_path(std::string_view path);
  /// From what the operating system reported (accept, getsockname, getpeername).
  static SocketAddress from_sockaddr(const sockaddr* address, socklen_t length);
  /// A named in-process address, for channels without sockets.
  static SocketAddress embedded(std::string_view name);

  /// What the address is.
  Kind kind() const noexcept { return kind_; }
  /// True for IPv4 and IPv6 addresses.
  bool is_ip() const noexcept { return kind_ == Kind::kIpv4 || kind_ == Kind::kIpv6; }
  /// The numeric IP ("127.0.0.1", "::1"); empty for other kinds.
  std::string ip() const;
  /// The port (0 for non-IP kinds).
  std::uint16_t port() const noexcept;
  /// The Unix path or the embedded name.
  const std::string& path() const noexcept { return text_; }
  /// "127.0.0.1:80", "[::1]:80", "unix:/tmp/s", "embedded:name".
  std::string to_string() const;

  /// The sockaddr for bind/connect; length() is 0 for kNone and kEmbedded.
  const sockaddr* sockaddr_ptr() const noexcept {
    return other_ ? reinterpret_cast<const sockaddr*>(other_.get()) : &inet_.sa;
  }
  /// The length of the sockaddr (0 for kNone and kEmbedded).
  socklen_t length() const noexcept { return length_; }

  /// Equal kinds and equal addresses (and ports).
  friend bool operator==(const SocketAddress& a, const SocketAddress& b) noexcept;

 private:
  const sockaddr_in& ip4() const noexcept {
    return *reinterpret_cast<const sockaddr_in*>(sockaddr_ptr());
  }
  const sockaddr_in6& ip6() const noexcept {
    return *reinterpret_cast<const sockaddr_in6*>(sockaddr_ptr());
  }

  union Inet {
    sockaddr sa;
    sockaddr_in v4;
    sockaddr_in6 v6;
  };

  Kind kind_ = Kind::kNone;
  socklen_t length_ = 0;
  Inet inet_;                                      // kIpv4, kIpv6 (zeroed otherwise)
  std::shared_ptr<const sockaddr_storage> other_;  // any other address with a length
  std::string text_;
};

}  // namespace trellis
