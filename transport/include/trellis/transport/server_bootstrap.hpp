// ServerBootstrap: sets up a listening ServerSocketChannel on a parent group whose accepted
// channels run on a child group, each with the child options and the child handler.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/future.hpp>
#include <trellis/transport/channel_option.hpp>
#include <trellis/transport/event_loop_group.hpp>
#include <trellis/transport/server_socket_channel.hpp>

namespace trellis {

class ServerBootstrap {
 public:
  ServerBootstrap& group(EventLoopGroup& parent_and_child) {
    return group(parent_and_child, parent_and_child);
  }
  ServerBootstrap& group(EventLoopGroup& parent, EventLoopGroup& child) {
    parent_ = &parent;
    child_ = &child;
    return *this;
  }
  // The server channel type. TCP and Unix domain sockets share ServerSocketChannel; the
  // address given to bind selects the family.
  template <class C>
  ServerBootstrap& channel() {
    static_assert(std::is_same_v<C, ServerSocketChannel>, "only ServerSocketChannel is supported");
    return *this;
  }
  // Options of the listening socket(s).
  template <class T, class V>
  ServerBootstrap& option(const ChannelOption<T>& opt, V&& value) {
    set_option(options_, opt, std::forward<V>(value));
    return *this;
  }
  // Options of every accepted channel.
  template <class T, class V>
  ServerBootstrap& child_option(const ChannelOption<T>& opt, V&& value) {
    set_option(child_options_, opt, std::forward<V>(value));
    return *this;
  }
  // A handler for the server channel's pipeline (sees accepted channels, binds, errors).
  ServerBootstrap& handler(std::shared_ptr<ChannelHandler> h) {
    handler_ = std::move(h);
    return *this;
  }
  // Added to each accepted channel's pipeline (usually a sharable ChannelInitializer).
  ServerBootstrap& child_handler(std::shared_ptr<ChannelHandler> h) {
    child_handler_ = std::move(h);
    return *this;
  }
  // With SO_REUSEPORT, one listening socket per parent loop, each accepting onto its own loop
  // (the kernel spreads connections). The returned channel is the first; closing it closes all.
  ServerBootstrap& acceptor_per_loop(bool on = true) {
    acceptor_per_loop_ = on;
    return *this;
  }

  // Binds to host (a numeric IP, a name resolved now, or "unix:/path") and port (0: any).
  Future<std::shared_ptr<Channel>> bind(const std::string& host, std::uint16_t port);
  Future<std::shared_ptr<Channel>> bind(const SocketAddress& local);

 private:
  Future<std::shared_ptr<ServerSocketChannel>> bind_one(EventLoop& loop, const SocketAddress& local,
                                                        bool own_loop_children);

  EventLoopGroup* parent_ = nullptr;
  EventLoopGroup* child_ = nullptr;
  ChannelOptions options_;
  ChannelOptions child_options_;
  std::shared_ptr<ChannelHandler> handler_;
  std::shared_ptr<ChannelHandler> child_handler_;
  bool acceptor_per_loop_ = false;
};

}  // namespace trellis
