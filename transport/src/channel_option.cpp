// ChannelOptions: applying socket options and config settings (see channel_option.hpp).
#include <trellis/transport/channel_option.hpp>

#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <utility>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/error.hpp>

namespace trellis {

namespace {

void set_int(int fd, int level, int name, int value, const char* what) {
  if (::setsockopt(fd, level, name, &value, sizeof value) != 0) {
    throw IoError(std::error_code(errno, std::system_category()), what);
  }
}

// The address family (AF_INET, AF_INET6, AF_UNIX; 0 if unknown) and type (SOCK_STREAM,
// SOCK_DGRAM) of fd.
std::pair<int, int> family_and_type(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {0, 0};
  int type = 0;
  socklen_t type_len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0) type = 0;
  return {ss.ss_family, type};
}

unsigned interface_index(const NetworkInterfaceName& name) {
  const unsigned index = ::if_nametoindex(name.c_str());
  if (index == 0) {
    throw IoError(std::error_code(errno, std::system_category()),
                  std::string("interface ") + name.c_str());
  }
  return index;
}

void apply_multicast_options(const ChannelOptions& o, int fd, bool ipv6) {
  if (ipv6) {
    if (o.ip_multicast_loop) {
      set_int(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, *o.ip_multicast_loop, "IPV6_MULTICAST_LOOP");
    }
    if (o.ip_multicast_ttl) {
      set_int(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, *o.ip_multicast_ttl, "IPV6_MULTICAST_HOPS");
    }
    if (o.ip_multicast_if) {
      set_int(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF,
              static_cast<int>(interface_index(*o.ip_multicast_if)), "IPV6_MULTICAST_IF");
    }
    return;
  }
  if (o.ip_multicast_loop) {
    set_int(fd, IPPROTO_IP, IP_MULTICAST_LOOP, *o.ip_multicast_loop, "IP_MULTICAST_LOOP");
  }
  if (o.ip_multicast_ttl) {
    set_int(fd, IPPROTO_IP, IP_MULTICAST_TTL, *o.ip_multicast_ttl, "IP_MULTICAST_TTL");
  }
  if (o.ip_multicast_if) {
    ip_mreqn request{};
    request.imr_ifindex = static_cast<int>(interface_index(*o.ip_multicast_if));
    if (::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &request, sizeof request) != 0) {
      throw IoError(std::error_code(errno, std::system_category()), "IP_MULTICAST_IF");
    }
  }
}

}  // namespace

void ChannelOptions::apply_to_socket(int fd, bool listening) const {
  const auto [family, type] = family_and_type(fd);
  apply_to_socket(fd, listening, family, type);
}

void ChannelOptions::apply_to_socket(int fd, bool listening, int family, int type) const {
  const bool ip = family == AF_INET || family == AF_INET6;
  const bool tcp = ip && type == SOCK_STREAM;
  const bool udp = ip && type == SOCK_DGRAM;
  if (so_reuseaddr) set_int(fd, SOL_SOCKET, SO_REUSEADDR, *so_reuseaddr, "SO_REUSEADDR");
  if (so_reuseport && ip) set_int(fd, SOL_SOCKET, SO_REUSEPORT, *so_reuseport, "SO_REUSEPORT");
  if (so_rcvbuf) set_int(fd, SOL_SOCKET, SO_RCVBUF, *so_rcvbuf, "SO_RCVBUF");
  if (so_sndbuf) set_int(fd, SOL_SOCKET, SO_SNDBUF, *so_sndbuf, "SO_SNDBUF");
  if (listening) return;
  if (udp) {
    if (so_broadcast) set_int(fd, SOL_SOCKET, SO_BROADCAST, *so_broadcast, "SO_BROADCAST");
    apply_multicast_options(*this, fd, family == AF_INET6);
    return;  // nothing below applies to datagrams
  }
  if (tcp) set_int(fd, IPPROTO_TCP, TCP_NODELAY, tcp_nodelay.value_or(true), "TCP_NODELAY");
  if (so_keepalive) set_int(fd, SOL_SOCKET, SO_KEEPALIVE, *so_keepalive, "SO_KEEPALIVE");
  if (so_linger) {
    linger l{*so_linger >= 0 ? 1 : 0, *so_linger >= 0 ? *so_linger : 0};
    if (::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l) != 0) {
      throw IoError(std::error_code(errno, std::system_category()), "SO_LINGER");
    }
  }
}

void ChannelOptions::apply_to_config(Channel& channel) const {
  auto& config = channel.config();
  if (auto_read) config.set_auto_read(*auto_read);
  if (write_buffer_water_mark) {
    config.set_write_buffer_water_mark(write_buffer_water_mark->low, write_buffer_water_mark->high);
  }
  if (allocator && *allocator) config.set_allocator(**allocator);
  if (max_messages_per_read) config.set_max_messages_per_read(*max_messages_per_read);
  if (connect_timeout) config.set_connect_timeout(*connect_timeout);
  if (eof_drain_timeout) config.set_eof_drain_timeout(*eof_drain_timeout);
}

}  // namespace trellis
