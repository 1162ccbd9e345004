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

/// A network interface by name ("lo", "eth0"), stored inline (IFNAMSIZ bytes) so that options
/// stay cheap to copy; a longer name is cut and then names no interface.
struct NetworkInterfaceName {
  /// Copies name (at most 15 characters).
  NetworkInterfaceName(std::string_view name) {  // NOLINT: implicit, as option values are
    name.copy(chars, std::min(name.size(), sizeof chars - 1));
  }
  /// The name, NUL-terminated.
  const char* c_str() const noexcept { return chars; }
  /// The name's characters, NUL-padded.
  char chars[16] = {};
};

/// A channel's write buffer water marks, in bytes: the channel turns unwritable when more than
/// `high` bytes wait to be written, and writable again once they fall below `low`.
struct WriteBufferWaterMark {
  std::size_t low = 32 * 1024;   ///< Writable again below this.
  std::size_t high = 64 * 1024;  ///< Unwritable above this.
};

/// Every option a bootstrap can carry; unset ones keep the operating system's or the config's
/// default. TCP_NODELAY is on unless set to false. Set them through the bootstraps' `option()`
/// with the `channel_option` constants.
struct ChannelOptions {
  std::optional<bool> so_reuseaddr;  ///< SO_REUSEADDR.
  std::optional<bool> so_reuseport;  ///< SO_REUSEPORT.
  std::optional<bool> tcp_nodelay;   ///< TCP_NODELAY (on unless false).
  std::optional<bool> so_keepalive;  ///< SO_KEEPALIVE.
  std::optional<int> so_rcvbuf;      ///< SO_RCVBUF, in bytes.
  std::optional<int> so_sndbuf;      ///< SO_SNDBUF, in bytes.
  std::optional<int> so_backlog;     ///< The listen backlog of a server socket.
  /// SO_LINGER, in seconds; a negative value turns lingering off.
  std::optional<int> so_linger;
  std::optional<bool> auto_read;  ///< ChannelConfig::auto_read.
  /// ChannelConfig's write buffer water marks.
  std::optional<WriteBufferWaterMark> write_buffer_water_mark;
  std::optional<ByteBufAllocator*> allocator;  ///< The channel's buffer allocator.
  std::optional<int> max_messages_per_read;    ///< ChannelConfig::max_messages_per_read.
  /// How long a connect may take before it fails with ConnectTimeoutError.
  std::optional<std::chrono::milliseconds> connect_timeout;
  /// ChannelConfig::eof_drain_timeout: how long a peer's FIN may wait for flushed writes.
  std::optional<std::chrono::milliseconds> eof_drain_timeout;
  /// ChannelConfig::allow_half_closure: a peer's FIN closes only the input.
  std::optional<bool> allow_half_closure;
  /// SO_BROADCAST: datagram sockets only (ignored on stream sockets).
  std::optional<bool> so_broadcast;
  /// Multicast: loop our own multicast sends back to this host (Linux default: on).
  std::optional<bool> ip_multicast_loop;
  /// Multicast: the hop limit of our multicast sends (TTL; default 1).
  std::optional<int> ip_multicast_ttl;
  /// Multicast: the interface our multicast sends leave by, by name ("lo", "eth0").
  std::optional<NetworkInterfaceName> ip_multicast_if;
  /// The largest datagram a DatagramChannel receives (each read takes a buffer of this size;
  /// longer datagrams are dropped). Default DatagramChannel::kDefaultMaxDatagramSize (2048).
  std::optional<int> max_datagram_size;

  /// Applies the socket options that fit fd (TCP options only on TCP, datagram ones only on
  /// UDP). Throws IoError when the operating system refuses one.
  void apply_to_socket(int fd, bool listening) const;
  /// The same for a socket whose address family (AF_INET, AF_INET6, AF_UNIX) and type
  /// (SOCK_STREAM, SOCK_DGRAM) the caller knows, without asking the kernel.
  void apply_to_socket(int fd, bool listening, int family, int type) const;
  /// Applies the ChannelConfig settings (auto_read, water marks, ...).
  void apply_to_config(Channel& channel) const;
};

/// A typed handle on one member of ChannelOptions (the `channel_option` constants).
template <class T>
struct ChannelOption {
  std::optional<T> ChannelOptions::*member;  ///< The member it sets.
  const char* name;                          ///< The option's name ("TCP_NODELAY").
};

/// Sets option in options to value (converted to the option's type).
template <class T, class V>
void set_option(ChannelOptions& options, const ChannelOption<T>& option, V&& value) {
  options.*(option.member) = T(std::forward<V>(value));
}

/// The options a bootstrap's `option()` takes, one per member of ChannelOptions.
namespace channel_option {
/// Sets ChannelOptions::so_reuseaddr.
inline constexpr ChannelOption<bool> so_reuseaddr{&ChannelOptions::so_reuseaddr, "SO_REUSEADDR"};
/// Sets ChannelOptions::so_reuseport.
inline constexpr ChannelOption<bool> so_reuseport{&ChannelOptions::so_reuseport, "SO_REUSEPORT"};
/// Sets ChannelOptions::tcp_nodelay.
inline constexpr ChannelOption<bool> tcp_nodelay{&ChannelOptions::tcp_nodelay, "TCP_NODELAY"};
/// Sets ChannelOptions::so_keepalive.
inline constexpr ChannelOption<bool> so_keepalive{&ChannelOptions::so_keepalive, "SO_KEEPALIVE"};
/// Sets ChannelOptions::so_rcvbuf.
inline constexpr ChannelOption<int> so_rcvbuf{&ChannelOptions::so_rcvbuf, "SO_RCVBUF"};
/// Sets ChannelOptions::so_sndbuf.
inline constexpr ChannelOption<int> so_sndbuf{&ChannelOptions::so_sndbuf, "SO_SNDBUF"};
/// Sets ChannelOptions::so_backlog.
inline constexpr ChannelOption<int> so_backlog{&ChannelOptions::so_backlog, "SO_BACKLOG"};
/// Sets ChannelOptions::so_linger.
inline constexpr ChannelOption<int> so_linger{&ChannelOptions::so_linger, "SO_LINGER"};
/// Sets ChannelOptions::auto_read.
inline constexpr ChannelOption<bool> auto_read{&ChannelOptions::auto_read, "AUTO_READ"};
/// Sets ChannelOptions::write_buffer_water_mark.
inline constexpr ChannelOption<WriteBufferWaterMark> write_buffer_water_mark{
    &ChannelOptions::write_buffer_water_mark, "WRITE_BUFFER_WATER_MARK"};
/// Sets ChannelOptions::allocator.
inline constexpr ChannelOption<ByteBufAllocator*> allocator{&ChannelOptions::allocator,
                                                            "ALLOCATOR"};
/// Sets ChannelOptions::max_messages_per_read.
inline constexpr ChannelOption<int> max_messages_per_read{&ChannelOptions::max_messages_per_read,
                                                          "MAX_MESSAGES_PER_READ"};
/// Sets ChannelOptions::connect_timeout.
inline constexpr ChannelOption<std::chrono::milliseconds> connect_timeout{
    &ChannelOptions::connect_timeout, "CONNECT_TIMEOUT"};
/// Sets ChannelOptions::eof_drain_timeout.
inline constexpr ChannelOption<std::chrono::milliseconds> eof_drain_timeout{
    &ChannelOptions::eof_drain_timeout, "EOF_DRAIN_TIMEOUT"};
/// Sets ChannelOptions::allow_half_closure.
inline constexpr ChannelOption<bool> allow_half_closure{&ChannelOptions::allow_half_closure,
                                                        "ALLOW_HALF_CLOSURE"};
/// Sets ChannelOptions::so_broadcast.
inline constexpr ChannelOption<bool> so_broadcast{&ChannelOptions::so_broadcast, "SO_BROADCAST"};
/// Sets ChannelOptions::ip_multicast_loop.
inline constexpr ChannelOption<bool> ip_multicast_loop{&ChannelOptions::ip_multicast_loop,
                                                       "IP_MULTICAST_LOOP"};
/// Sets ChannelOptions::ip_multicast_ttl.
inline constexpr ChannelOption<int> ip_multicast_ttl{&ChannelOptions::ip_multicast_ttl,
                                                     "IP_MULTICAST_TTL"};
/// Sets ChannelOptions::ip_multicast_if.
inline constexpr ChannelOption<NetworkInterfaceName> ip_multicast_if{
    &ChannelOptions::ip_multicast_if, "IP_MULTICAST_IF"};
/// Sets ChannelOptions::max_datagram_size.
inline constexpr ChannelOption<int> max_datagram_size{&ChannelOptions::max_datagram_size,
                                                      "MAX_DATAGRAM_SIZE"};
}  // namespace channel_option

}  // namespace trellis
