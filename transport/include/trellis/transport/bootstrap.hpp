// Bootstrap: connects client SocketChannels (TCP by host name or address, or Unix domain),
// with the handler, options and connect timeout given.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/future.hpp>
#include <trellis/transport/channel_option.hpp>
#include <trellis/transport/event_loop_group.hpp>
#include <trellis/transport/socket_channel.hpp>

namespace trellis {

class Bootstrap {
 public:
  Bootstrap& group(EventLoopGroup& group) {
    group_ = &group;
    return *this;
  }
  Bootstrap& handler(std::shared_ptr<ChannelHandler> h) {
    handler_ = std::move(h);
    return *this;
  }
  template <class T, class V>
  Bootstrap& option(const ChannelOption<T>& opt, V&& value) {
    set_option(options_, opt, std::forward<V>(value));
    return *this;
  }

  // Resolves host with Asio's resolver (numeric addresses and "unix:/path" skip it) and tries
  // each address in turn. Fails with IoError carrying the errno text (ConnectTimeoutError when
  // connect_timeout ran out).
  Future<std::shared_ptr<Channel>> connect(const std::string& host, std::uint16_t port);
  Future<std::shared_ptr<Channel>> connect(const SocketAddress& remote);

 private:
  EventLoopGroup* group_ = nullptr;
  ChannelOptions options_;
  std::shared_ptr<ChannelHandler> handler_;
};

namespace detail {
// A numeric IP, "unix:/path" or nothing (a name to resolve).
std::optional<SocketAddress> parse_address(const std::string& host, std::uint16_t port);
}  // namespace detail

}  // namespace trellis
