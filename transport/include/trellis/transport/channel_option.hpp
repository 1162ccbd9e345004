// Typed channel options for bootstraps: socket options (SO_REUSEADDR, TCP_NODELAY, ...) and
// ChannelConfig settings, set with `bootstrap.option(channel_option::tcp_nodelay, true)`.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>

#include <trellis/pipeline/byte_buf_allocator.hpp>

namespace trellis {

class Channel;

// A network interface by name ("lo", "eth0"), stored inline (IFNAMSIZ bytes) so that options
// stay cheap to copy; a longer name is cut and then names no interface.
struct NetworkInterfaceName {
  NetworkInterfaceName(std::string_view name) {  // NOLINT: implicit, as option values are
    name.copy(chars, std::min(name.size(), sizeof chars - 1));
  }
  const char* c_str() const noexcept { return chars; }
  char chars[16] = {};
};

struct WriteBufferWaterMark {
  std::size_t low = 32 * 1024;
  std::size_t high = 64 * 1024;
};

// Every option a bootstrap can carry; unset ones keep the operating system's or the config's
// default. TCP_NODELAY is on unless set to false.
struct ChannelOptions {
  std::optional<bool> so_reuseaddr;
  std::optional<bool> so_reuseport;
  std::optional<bool> tcp_nodelay;
  std::optional<bool> so_keepalive;
  std::optional<int> so_rcvbuf;
  std::optional<int> so_sndbuf;
  std::optional<int> so_backlog;
  // Seconds; a negative value turns lingering off.
  std::optional<int> so_linger;
  std::optional<bool> auto_read;
  std::optional<WriteBufferWaterMark> write_buffer_water_mark;
  std::optional<ByteBufAllocator*> allocator;
  std::optional<int> max_messages_per_read;
  std::optional<std::chrono::milliseconds> connect_timeout;
  // ChannelConfig::eof_drain_timeout: how long a peer's FIN may wait for flushed writes.
  std::optional<std::chrono::milliseconds> eof_drain_timeout;
  std::optional<bool> allow_half_closure;
  // Datagram sockets only (ignored on stream sockets).
  std::optional<bool> so_broadcast;
  // Multicast: loop our own multicast sends back to this host (Linux default: on), their hop
  // limit (TTL; default 1), and the interface they leave by, by name ("lo", "eth0").
  std::optional<bool> ip_multicast_loop;
  std::optional<int> ip_multicast_ttl;
  std::optional<NetworkInterfaceName> ip_multicast_if;
  // The largest datagram a DatagramChannel receives (each read takes a buffer of this size;
  // longer datagrams are dropped). Default DatagramChannel::kDefaultMaxDatagramSize (2048).
  std::optional<int> max_datagram_size;

  // Applies the socket options that fit fd (TCP options only on TCP, datagram ones only on
  // UDP).
  // Throws IoError when the operating system refuses one.
  void apply_to_socket(int fd, bool listening) const;
  // Applies the ChannelConfig settings (auto_read, water marks, ...).
  void apply_to_config(Channel& channel) const;
};

// A typed handle on one member of ChannelOptions.
template <class T>
struct ChannelOption {
  std::optional<T> ChannelOptions::*member;
  const char* name;
};

template <class T, class V>
void set_option(ChannelOptions& options, const ChannelOption<T>& option, V&& value) {
  options.*(option.member) = T(std::forward<V>(value));
}

namespace channel_option {
inline constexpr ChannelOption<bool> so_reuseaddr{&ChannelOptions::so_reuseaddr, "SO_REUSEADDR"};
inline constexpr ChannelOption<bool> so_reuseport{&ChannelOptions::so_reuseport, "SO_REUSEPORT"};
inline constexpr ChannelOption<bool> tcp_nodelay{&ChannelOptions::tcp_nodelay, "TCP_NODELAY"};
inline constexpr ChannelOption<bool> so_keepalive{&ChannelOptions::so_keepalive, "SO_KEEPALIVE"};
inline constexpr ChannelOption<int> so_rcvbuf{&ChannelOptions::so_rcvbuf, "SO_RCVBUF"};
inline constexpr ChannelOption<int> so_sndbuf{&ChannelOptions::so_sndbuf, "SO_SNDBUF"};
inline constexpr ChannelOption<int> so_backlog{&ChannelOptions::so_backlog, "SO_BACKLOG"};
inline constexpr ChannelOption<int> so_linger{&ChannelOptions::so_linger, "SO_LINGER"};
inline constexpr ChannelOption<bool> auto_read{&ChannelOptions::auto_read, "AUTO_READ"};
inline constexpr ChannelOption<WriteBufferWaterMark> write_buffer_water_mark{
    &ChannelOptions::write_buffer_water_mark, "WRITE_BUFFER_WATER_MARK"};
inline constexpr ChannelOption<ByteBufAllocator*> allocator{&ChannelOptions::allocator,
                                                            "ALLOCATOR"};
inline constexpr ChannelOption<int> max_messages_per_read{&ChannelOptions::max_messages_per_read,
                                                          "MAX_MESSAGES_PER_READ"};
inline constexpr ChannelOption<std::chrono::milliseconds> connect_timeout{
    &ChannelOptions::connect_timeout, "CONNECT_TIMEOUT"};
inline constexpr ChannelOption<std::chrono::milliseconds> eof_drain_timeout{
    &ChannelOptions::eof_drain_timeout, "EOF_DRAIN_TIMEOUT"};
inline constexpr ChannelOption<bool> allow_half_closure{&ChannelOptions::allow_half_closure,
                                                        "ALLOW_HALF_CLOSURE"};
inline constexpr ChannelOption<bool> so_broadcast{&ChannelOptions::so_broadcast, "SO_BROADCAST"};
inline constexpr ChannelOption<bool> ip_multicast_loop{&ChannelOptions::ip_multicast_loop,
                                                       "IP_MULTICAST_LOOP"};
inline constexpr ChannelOption<int> ip_multicast_ttl{&ChannelOptions::ip_multicast_ttl,
                                                     "IP_MULTICAST_TTL"};
inline constexpr ChannelOption<NetworkInterfaceName> ip_multicast_if{
    &ChannelOptions::ip_multicast_if, "IP_MULTICAST_IF"};
inline constexpr ChannelOption<int> max_datagram_size{&ChannelOptions::max_datagram_size,
                                                      "MAX_DATAGRAM_SIZE"};
}  // namespace channel_option

}  // namespace trellis
