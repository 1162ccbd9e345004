// ChannelOptions: applying socket options and config settings (see channel_option.hpp).
#include <trellis/transport/channel_option.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/error.hpp>

namespace trellis {

namespace {

void set_int(int fd, int level, int name, int value, const char* what) {
  if (::setsockopt(fd, level, name, &value, sizeof value) != 0) {
    throw IoError(std::error_code(errno, std::system_category()), what);
  }
}

bool is_tcp(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return false;
  return ss.ss_family == AF_INET || ss.ss_family == AF_INET6;
}

}  // namespace

void ChannelOptions::apply_to_socket(int fd, bool listening) const {
  const bool tcp = is_tcp(fd);
  if (so_reuseaddr) set_int(fd, SOL_SOCKET, SO_REUSEADDR, *so_reuseaddr, "SO_REUSEADDR");
  if (so_reuseport && tcp) set_int(fd, SOL_SOCKET, SO_REUSEPORT, *so_reuseport, "SO_REUSEPORT");
  if (so_rcvbuf) set_int(fd, SOL_SOCKET, SO_RCVBUF, *so_rcvbuf, "SO_RCVBUF");
  if (so_sndbuf) set_int(fd, SOL_SOCKET, SO_SNDBUF, *so_sndbuf, "SO_SNDBUF");
  if (listening) return;
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
