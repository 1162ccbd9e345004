// ServerBootstrap: sets up a listening ServerSocketChannel on a parent group whose accepted
// channels run on a child group, each with the child options and the child handler.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/future.hpp>
#include <trellis/pipeline/promise.hpp>
#include <trellis/transport/async_server_channel.hpp>
#include <trellis/transport/channel_option.hpp>
#include <trellis/transport/event_loop_group.hpp>
#include <trellis/transport/server_socket_channel.hpp>

namespace trellis {

/// Sets up a listening ServerSocketChannel on a parent group whose accepted channels run on a
/// child group, each with the child options and the child handler. Configure it on one thread;
/// bind() may be called from any thread. The setters return the ServerBootstrap, for chaining.
class ServerBootstrap {
 public:
  /// One group both listens and runs the accepted channels.
  ServerBootstrap& group(EventLoopGroup& parent_and_child) {
    return group(parent_and_child, parent_and_child);
  }
  /// parent listens; accepted channels run on child's loops.
  ServerBootstrap& group(EventLoopGroup& parent, EventLoopGroup& child) {
    parent_ = &parent;
    child_ = &child;
    return *this;
  }
  /// The server channel type. TCP and Unix domain sockets share ServerSocketChannel; the
  /// address given to bind selects the family.
  template <class C>
  ServerBootstrap& channel() {
    static_assert(std::is_same_v<C, ServerSocketChannel>, "only ServerSocketChannel is supported");
    return *this;
  }
  /// Options of the listening socket(s).
  template <class T, class V>
  ServerBootstrap& option(const ChannelOption<T>& opt, V&& value) {
    set_option(options_, opt, std::forward<V>(value));
    return *this;
  }
  /// Options of every accepted channel.
  template <class T, class V>
  ServerBootstrap& child_option(const ChannelOption<T>& opt, V&& value) {
    set_option(child_options_, opt, std::forward<V>(value));
    return *this;
  }
  /// A handler for the server channel's pipeline (sees accepted channels, binds, errors).
  ServerBootstrap& handler(std::shared_ptr<ChannelHandler> h) {
    handler_ = std::move(h);
    return *this;
  }
  /// Added to each accepted channel's pipeline (usually a sharable ChannelInitializer).
  ServerBootstrap& child_handler(std::shared_ptr<ChannelHandler> h) {
    child_handler_ = std::move(h);
    return *this;
  }
  /// With SO_REUSEPORT, one listening socket per parent loop, each accepting onto its own loop
  /// (the kernel spreads connections). The returned channel is the first; closing it closes all.
  ServerBootstrap& acceptor_per_loop(bool on = true) {
    acceptor_per_loop_ = on;
    return *this;
  }

  /// Binds to host (a numeric IP, a name resolved now, or "unix:/path") and port (0: any). The
  /// future completes with the server channel once it listens, or fails with IoError.
  Future<std::shared_ptr<Channel>> bind(const std::string& host, std::uint16_t port);
  /// Binds to local (no resolution); fails like bind(host, port).
  Future<std::shared_ptr<Channel>> bind(const SocketAddress& local);

  /// Binds like bind() and hands out the server as an AsyncServerChannel<In, Out> (see
  /// async_server_channel.hpp): each accepted channel gets the child options (auto_read forced
  /// off until it is wrapped) and the child handler, then an AsyncChannel<In, Out> at the tail of
  /// its pipeline, made on its own loop. Not with acceptor_per_loop (IllegalStateError).
  template <class In, class Out>
  Future<AsyncServerChannel<In, Out>> bind_async(const std::string& host, std::uint16_t port,
                                                 AsyncServerChannelOptions options = {}) {
    const AsyncChannelOptions child = options.child;
    detail::AsyncChildWrapper wrap = [child](Channel& ch) {
      return Message(AsyncChannel<In, Out>::wrap(ch, child));
    };
    Future<detail::AsyncServerBinding> bound = bind_async_erased(host, port, options, wrap);
    Promise<AsyncServerChannel<In, Out>> result(bound.executor());
    bound.add_listener([result](const Future<detail::AsyncServerBinding>& f) mutable {
      if (f.is_success()) {
        result.try_set_value(AsyncServerChannel<In, Out>(f.get()));
      } else {
        result.try_set_exception(f.cause());
      }
    });
    return result.future();
  }

 private:
  Future<std::shared_ptr<ServerSocketChannel>> bind_one(EventLoop& loop, const SocketAddress& local,
                                                        bool own_loop_children,
                                                        std::shared_ptr<ChannelHandler> acceptor);
  Future<detail::AsyncServerBinding> bind_async_erased(const std::string& host, std::uint16_t port,
                                                       const AsyncServerChannelOptions& options,
                                                       detail::AsyncChildWrapper wrap);

  EventLoopGroup* parent_ = nullptr;
  EventLoopGroup* child_ = nullptr;
  ChannelOptions options_;
  ChannelOptions child_options_;
  std::shared_ptr<ChannelHandler> handler_;
  std::shared_ptr<ChannelHandler> child_handler_;
  bool acceptor_per_loop_ = false;
};

}  // namespace trellis
