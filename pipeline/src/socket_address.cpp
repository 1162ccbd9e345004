// SocketAddress conversions (see socket_address.hpp).
#include <trellis/pipeline/socket_address.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>

#include <trellis/pipeline/error.hpp>

namespace trellis {

SocketAddress::SocketAddress() noexcept { std::memset(&inet_, 0, sizeof(inet_)); }

SocketAddress SocketAddress::from_ip(std::string_view ip, std::uint16_t port) {
  SocketAddress a;
  std::string text(ip);
  if (text.size() > 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  auto* v4 = &a.inet_.v4;
  auto* v6 = &a.inet_.v6;
  if (inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    a.kind_ = Kind::kIpv4;
    a.length_ = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    a.kind_ = Kind::kIpv6;
    a.length_ = sizeof(sockaddr_in6);
  } else {
    throw InvalidArgumentError("not a numeric IP address: '" + std::string(ip) + "'");
  }
  return a;
}

SocketAddress SocketAddress::from_unix_path(std::string_view path) {
  SocketAddress a;
  auto storage = std::make_shared<sockaddr_storage>();  // zeroed
  auto* un = reinterpret_cast<sockaddr_un*>(storage.get());
  if (path.size() >= sizeof(un->sun_path)) {
    throw InvalidArgumentError("unix socket path too long: '" + std::string(path) + "'");
  }
  un->sun_family = AF_UNIX;
  std::memcpy(un->sun_path, path.data(), path.size());
  a.other_ = std::move(storage);
  a.kind_ = Kind::kUnix;
  a.length_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  a.text_ = std::string(path);
  return a;
}

SocketAddress SocketAddress::from_sockaddr(const sockaddr* address, socklen_t length) {
  SocketAddress a;
  if (address == nullptr || length <= 0 ||
      static_cast<std::size_t>(length) > sizeof(sockaddr_storage)) {
    return a;
  }
  a.length_ = length;
  const bool inet = (address->sa_family == AF_INET || address->sa_family == AF_INET6) &&
                    static_cast<std::size_t>(length) <= sizeof(Inet);
  if (inet) {
    std::memcpy(&a.inet_, address, static_cast<std::size_t>(length));
  } else {
    auto storage = std::make_shared<sockaddr_storage>();  // zeroed
    std::memcpy(storage.get(), address, static_cast<std::size_t>(length));
    a.other_ = std::move(storage);
  }
  switch (address->sa_family) {
    case AF_INET:
      a.kind_ = Kind::kIpv4;
      break;
    case AF_INET6:
      a.kind_ = Kind::kIpv6;
      break;
    case AF_UNIX: {
      a.kind_ = Kind::kUnix;
      const auto* un = reinterpret_cast<const sockaddr_un*>(a.other_.get());
      const auto max = static_cast<std::size_t>(length) - offsetof(sockaddr_un, sun_path);
      a.text_.assign(un->sun_path, strnlen(un->sun_path, max));
      break;
    }
    default:
      a.kind_ = Kind::kNone;
  }
  return a;
}

SocketAddress SocketAddress::embedded(std::string_view name) {
  SocketAddress a;
  a.kind_ = Kind::kEmbedded;
  a.text_ = std::string(name);
  return a;
}

std::string SocketAddress::ip() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (kind_ == Kind::kIpv4) {
    inet_ntop(AF_INET, &ip4().sin_addr, buf, sizeof(buf));
  } else if (kind_ == Kind::kIpv6) {
    inet_ntop(AF_INET6, &ip6().sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

std::uint16_t SocketAddress::port() const noexcept {
  if (kind_ == Kind::kIpv4) return ntohs(ip4().sin_port);
  if (kind_ == Kind::kIpv6) return ntohs(ip6().sin6_port);
  return 0;
}

std::string SocketAddress::to_string() const {
  switch (kind_) {
    case Kind::kIpv4:
      return ip() + ":" + std::to_string(port());
    case Kind::kIpv6:
      return "[" + ip() + "]:" + std::to_string(port());
    case Kind::kUnix:
      return "unix:" + text_;
    case Kind::kEmbedded:
      return "embedded:" + text_;
    case Kind::kNone:
      break;
  }
  return "none";
}

bool operator==(const SocketAddress& a, const SocketAddress& b) noexcept {
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case SocketAddress::Kind::kIpv4:
    case SocketAddress::Kind::kIpv6:
      return a.port() == b.port() && a.ip() == b.ip();
    case SocketAddress::Kind::kUnix:
    case SocketAddress::Kind::kEmbedded:
      return a.text_ == b.text_;
    case SocketAddress::Kind::kNone:
      return true;
  }
  return false;
}

}  // namespace trellis
