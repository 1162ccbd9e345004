// SocketAddress: a channel's local or remote address as a plain value (IPv4, IPv6, Unix-domain
// path, or a named in-process address for embedded channels), convertible to a sockaddr for the
// transport without bringing Asio into the pipeline layer.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace trellis {

class SocketAddress {
 public:
  enum class Kind { kNone, kIpv4, kIpv6, kUnix, kEmbedded };

  SocketAddress() noexcept;
  // From a numeric IPv4 or IPv6 address; throws InvalidArgumentError for anything else.
  static SocketAddress from_ip(std::string_view ip, std::uint16_t port);
  static SocketAddress from_unix_path(std::string_view path);
  // From what the operating system reported (accept, getsockname, getpeername).
  static SocketAddress from_sockaddr(const sockaddr* address, socklen_t length);
  // A named in-process address, for channels without sockets.
  static SocketAddress embedded(std::string_view name);

  Kind kind() const noexcept { return kind_; }
  bool is_ip() const noexcept { return kind_ == Kind::kIpv4 || kind_ == Kind::kIpv6; }
  // The numeric IP ("127.0.0.1", "::1"); empty for other kinds.
  std::string ip() const;
  // The port (0 for non-IP kinds).
  std::uint16_t port() const noexcept;
  // The Unix path or the embedded name.
  const std::string& path() const noexcept { return text_; }
  // "127.0.0.1:80", "[::1]:80", "unix:/tmp/s", "embedded:name".
  std::string to_string() const;

  // For bind/connect; length() is 0 for kNone and kEmbedded.
  const sockaddr* sockaddr_ptr() const noexcept {
    return reinterpret_cast<const sockaddr*>(&storage_);
  }
  socklen_t length() const noexcept { return length_; }

  friend bool operator==(const SocketAddress& a, const SocketAddress& b) noexcept;

 private:
  Kind kind_ = Kind::kNone;
  sockaddr_storage storage_;
  socklen_t length_ = 0;
  std::string text_;
};

}  // namespace trellis
