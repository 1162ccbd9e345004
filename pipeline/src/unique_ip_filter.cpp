// UniqueIpFilter (see unique_ip_filter.hpp).
#include <trellis/pipeline/unique_ip_filter.hpp>

#include <arpa/inet.h>

#include <cstring>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

namespace trellis {

namespace {

// The IP of `remote` as text, an IPv4-mapped IPv6 address as its IPv4 address; empty for
// non-IP addresses.
std::string ip_key(const SocketAddress& remote) {
  if (remote.kind() == SocketAddress::Kind::kIpv6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(remote.sockaddr_ptr());
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
      char text[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, reinterpret_cast<const std::uint8_t*>(&in6->sin6_addr) + 12, text,
                sizeof text);
      return text;
    }
  }
  return remote.is_ip() ? remote.ip() : std::string();
}

}  // namespace

UniqueIpFilter::UniqueIpFilter() : connected_(std::make_shared<Connected>()) {}

std::size_t UniqueIpFilter::connected_count() const {
  std::lock_guard lock(connected_->mutex);
  return connected_->ips.size();
}

bool UniqueIpFilter::is_connected(const std::string& ip) const {
  std::lock_guard lock(connected_->mutex);
  return connected_->ips.contains(ip);
}

bool UniqueIpFilter::accept(ChannelHandlerContext& ctx, const SocketAddress& remote) {
  std::string key = ip_key(remote);
  if (key.empty()) return true;
  {
    std::lock_guard lock(connected_->mutex);
    if (!connected_->ips.insert(key).second) return false;
  }
  ctx.channel().close_future().add_listener(
      [connected = connected_, key = std::move(key)](const Future<void>&) {
        std::lock_guard lock(connected->mutex);
        connected->ips.erase(key);
      });
  return true;
}

}  // namespace trellis
