// Bootstrap: connects client SocketChannels (TCP by host name or address, or Unix domain),
// with the handler, options and connect timeout given; with channel<DatagramChannel>() it binds
// or connects UDP channels instead.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include <trellis/pipeline/async_channel.hpp>
#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/future.hpp>
#include <trellis/pipeline/promise.hpp>
#include <trellis/transport/channel_option.hpp>
#include <trellis/transport/datagram_channel.hpp>
#include <trellis/transport/event_loop_group.hpp>
#include <trellis/transport/socket_channel.hpp>

namespace trellis {

/// Connects client SocketChannels (TCP or Unix domain), or binds and connects DatagramChannels,
/// with the handler and options given. Configure it on one thread; a configured Bootstrap is a
/// value that may be copied, and connect() and bind() may be called from any thread. The
/// setters return the Bootstrap, for chaining.
class Bootstrap {
 public:
  /// Registers channels on the group's next loop.
  Bootstrap& group(EventLoopGroup& group) {
    group_ = &group;
    loop_ = nullptr;
    return *this;
  }
  /// Connects on this loop rather than on the group's next one (a client that keeps its
  /// connections on the loop its requests run on).
  Bootstrap& group(EventLoop& loop) {
    loop_ = &loop;
    return *this;
  }
  /// The handler added to each new channel's pipeline (usually a ChannelInitializer).
  Bootstrap& handler(std::shared_ptr<ChannelHandler> h) {
    handler_ = std::move(h);
    return *this;
  }
  /// Sets a channel option (`channel_option::tcp_nodelay`, ...) for the channels made.
  template <class T, class V>
  Bootstrap& option(const ChannelOption<T>& opt, V&& value) {
    set_option(options_, opt, std::forward<V>(value));
    return *this;
  }
  /// The kind of channel made: SocketChannel (the default) or DatagramChannel.
  template <class C>
  Bootstrap& channel() {
    static_assert(std::is_same_v<C, SocketChannel> || std::is_same_v<C, DatagramChannel>,
                  "Bootstrap makes SocketChannels or DatagramChannels");
    datagram_ = std::is_same_v<C, DatagramChannel>;
    return *this;
  }

  /// Resolves host with Asio's resolver (numeric addresses and "unix:/path" skip it) and tries
  /// each address in turn. Fails with IoError carrying the errno text (ConnectTimeoutError when
  /// connect_timeout ran out). A DatagramChannel is connected to the first address that its
  /// socket accepts (connecting UDP sends nothing, so the peer is not checked).
  Future<std::shared_ptr<Channel>> connect(const std::string& host, std::uint16_t port);
  /// Connects to remote (no resolution); fails like connect(host, port).
  Future<std::shared_ptr<Channel>> connect(const SocketAddress& remote);

  /// Datagram channels only (channel<DatagramChannel>()): a channel bound to host:port (port 0:
  /// an ephemeral port, see local_address()), registered on the group's next loop with the
  /// handler; the future completes once it is bound (and active). A host name is resolved on
  /// the calling thread. Throws IllegalStateError for stream channels: a TCP server is a
  /// ServerBootstrap.
  Future<std::shared_ptr<Channel>> bind(const std::string& host, std::uint16_t port);
  /// bind() on the IPv4 wildcard 0.0.0.0.
  Future<std::shared_ptr<Channel>> bind(std::uint16_t port) { return bind("0.0.0.0", port); }
  /// bind() to local (no resolution).
  Future<std::shared_ptr<Channel>> bind(const SocketAddress& local);

  /// Connects like connect() and wraps the channel in an AsyncChannel<In, Out> on its event loop,
  /// at the tail of the pipeline that handler set up. The channel reads nothing until then
  /// (auto_read is forced off until the AsyncChannel turns it on). Fails like connect(). Use the
  /// AsyncChannel from its loop: `ac.event_loop().spawn(talk(std::move(ac)))`.
  template <class In, class Out>
  Future<AsyncChannel<In, Out>> connect_async(const std::string& host, std::uint16_t port,
                                              AsyncChannelOptions options = {}) {
    Bootstrap unread = *this;
    unread.options_.auto_read = false;
    Future<std::shared_ptr<Channel>> connected = unread.connect(host, port);
    // The promise belongs to the channel's loop, where connect completes and the listener runs.
    Promise<AsyncChannel<In, Out>> result(connected.executor());
    connected.add_listener([result, options](const Future<std::shared_ptr<Channel>>& f) mutable {
      if (!f.is_success()) {
        result.try_set_exception(f.cause());
        return;
      }
      const std::shared_ptr<Channel>& ch = f.get();
      try {
        result.try_set_value(AsyncChannel<In, Out>::wrap(*ch, options));
      } catch (...) {
        ch->close();
        result.try_set_exception(std::current_exception());
      }
    });
    return result.future();
  }

 private:
  EventLoop& next_loop();

  bool datagram_ = false;
  EventLoopGroup* group_ = nullptr;
  EventLoop* loop_ = nullptr;
  ChannelOptions options_;
  std::shared_ptr<ChannelHandler> handler_;
};

namespace detail {
// A numeric IP, "unix:/path" or nothing (a name to resolve).
std::optional<SocketAddress> parse_address(const std::string& host, std::uint16_t port);
}  // namespace detail

}  // namespace trellis
