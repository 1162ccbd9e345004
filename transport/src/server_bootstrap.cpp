// ServerBootstrap: binding, and the acceptor that sets up accepted channels (see
// server_bootstrap.hpp).
#include <trellis/transport/server_bootstrap.hpp>

#include <atomic>
#include <vector>

#include <spdlog/spdlog.h>
#include <asio/ip/tcp.hpp>

#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/transport/bootstrap.hpp>

namespace trellis {

namespace {

// The last handler of a server pipeline: gives each accepted channel its options and child
// handler and registers it on its own loop. The children share one copy of the options.
class ServerBootstrapAcceptor final : public ChannelInboundHandler {
 public:
  ServerBootstrapAcceptor(ChannelOptions options, std::shared_ptr<ChannelHandler> handler)
      : options_(std::make_shared<const ChannelOptions>(std::move(options))),
        handler_(std::move(handler)) {}

  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    auto* child_ptr = msg.try_get<std::shared_ptr<SocketChannel>>();
    if (!child_ptr) {
      ctx.fire_channel_read(std::move(msg));
      return;
    }
    auto child = std::move(*child_ptr);
    child->set_options(options_);
    options_->apply_to_config(*child);
    auto handler = handler_;
    // The handler is added on the child's loop, just before registration.
    child->register_channel([handler](SocketChannel& ch) {
      if (handler) ch.pipeline().add_last(handler);
    });
  }

  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) override {
    // Accept errors should not close the server; log them and go on.
    ctx.fire_exception_caught(std::move(error));
  }

 private:
  std::shared_ptr<const ChannelOptions> options_;
  std::shared_ptr<ChannelHandler> handler_;
};

// A numeric address or "unix:/path", else a name resolved here, on the calling thread (binding
// is a start-up step). Throws IoError when the name does not resolve.
SocketAddress resolve_local(const std::string& host, std::uint16_t port) {
  if (auto address = detail::parse_address(host, port)) return *address;
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  std::error_code ec;
  auto results = resolver.resolve(host, std::to_string(port), asio::ip::tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    throw IoError(ec ? ec : std::make_error_code(std::errc::invalid_argument), "resolve " + host);
  }
  const auto ep = results.begin()->endpoint();
  return SocketAddress::from_sockaddr(ep.data(), ep.size());
}

}  // namespace

Future<std::shared_ptr<Channel>> ServerBootstrap::bind(const std::string& host,
                                                       std::uint16_t port) {
  std::optional<SocketAddress> local;
  try {
    local = resolve_local(host, port);
  } catch (...) {
    return make_failed_future<std::shared_ptr<Channel>>(std::current_exception());
  }
  return bind(*local);
}

Future<detail::AsyncServerBinding> ServerBootstrap::bind_async_erased(
    const std::string& host, std::uint16_t port, const AsyncServerChannelOptions& options,
    detail::AsyncChildWrapper wrap) {
  if (!parent_ || !child_) throw IllegalStateError("ServerBootstrap: group() not set");
  if (acceptor_per_loop_ && parent_->size() > 1) {
    throw IllegalStateError("ServerBootstrap::bind_async does not support acceptor_per_loop");
  }
  // Children read nothing until their AsyncChannel is at the tail (it turns auto_read on).
  ChannelOptions child_options = child_options_;
  child_options.auto_read = false;
  auto acceptor = std::make_shared<detail::AsyncAcceptHandler>(
      std::move(child_options), child_handler_, std::move(wrap), options);
  std::optional<SocketAddress> local;
  try {
    local = resolve_local(host, port);
  } catch (...) {
    return make_failed_future<detail::AsyncServerBinding>(std::current_exception());
  }
  EventLoop& loop = parent_->next();
  Promise<detail::AsyncServerBinding> result(&loop);
  bind_one(loop, *local, false, acceptor)
      .add_listener(
          [result, acceptor](const Future<std::shared_ptr<ServerSocketChannel>>& f) mutable {
            if (f.is_success()) {
              result.try_set_value(detail::AsyncServerBinding{f.get(), acceptor});
            } else {
              result.try_set_exception(f.cause());
            }
          });
  return result.future();
}

Future<std::shared_ptr<ServerSocketChannel>> ServerBootstrap::bind_one(
    EventLoop& loop, const SocketAddress& local, bool own_loop_children,
    std::shared_ptr<ChannelHandler> acceptor) {
  ServerSocketChannel::ChildLoopChooser chooser;
  if (own_loop_children) {
    chooser = [&loop]() -> EventLoop& { return loop; };
  } else {
    EventLoopGroup* child = child_;
    chooser = [child]() -> EventLoop& { return child->next(); };
  }
  auto server = ServerSocketChannel::create(loop, std::move(chooser));
  server->set_options(options_);
  options_.apply_to_config(*server);
  Promise<std::shared_ptr<ServerSocketChannel>> result(&loop);
  auto handler = handler_;
  server->register_channel([handler, acceptor](ServerSocketChannel& ch) {
    if (handler) ch.pipeline().add_last(handler);
    ch.pipeline().add_last("acceptor", acceptor);
  });
  loop.execute([server, result, local]() mutable {
    if (!server->is_registered()) {
      result.try_set_exception(std::make_exception_ptr(ClosedChannelError("registration failed")));
      return;
    }
    auto promise = server->new_promise();
    promise.future().add_listener([server, result](const Future<void>& f) mutable {
      if (f.is_success()) {
        result.try_set_value(server);
      } else {
        server->unsafe().close(ChannelPromise{});
        result.try_set_exception(f.cause());
      }
    });
    server->bind(local, promise);
  });
  return result.future();
}

Future<std::shared_ptr<Channel>> ServerBootstrap::bind(const SocketAddress& local) {
  if (!parent_ || !child_) throw IllegalStateError("ServerBootstrap: group() not set");
  EventLoop& first_loop = parent_->next();
  Promise<std::shared_ptr<Channel>> result(&first_loop);
  const bool per_loop = acceptor_per_loop_ && parent_->size() > 1 && local.is_ip();
  auto acceptor = std::make_shared<ServerBootstrapAcceptor>(child_options_, child_handler_);
  auto first = bind_one(first_loop, local, per_loop && parent_ == child_, acceptor);
  if (!per_loop) {
    first.add_listener([result](const Future<std::shared_ptr<ServerSocketChannel>>& f) mutable {
      if (f.is_success()) {
        result.try_set_value(f.get());
      } else {
        result.try_set_exception(f.cause());
      }
    });
    return result.future();
  }
  // One more acceptor on each other loop, bound to the port the first one got.
  first.wait();
  if (!first.is_success()) return make_failed_future<std::shared_ptr<Channel>>(first.cause());
  auto server = first.get();
  const auto bound = *server->local_address();
  std::vector<std::shared_ptr<ServerSocketChannel>> others;
  for (std::size_t i = 0; i < parent_->size(); ++i) {
    EventLoop& loop = (*parent_)[i];
    if (&loop == &first_loop) continue;
    auto f = bind_one(loop, bound, parent_ == child_,
                      std::make_shared<ServerBootstrapAcceptor>(child_options_, child_handler_));
    f.wait();
    if (!f.is_success()) {
      server->close();
      for (auto& o : others) o->close();
      return make_failed_future<std::shared_ptr<Channel>>(f.cause());
    }
    others.push_back(f.get());
  }
  server->close_future().add_listener([others](const Future<void>&) {
    for (auto& o : others) o->close();
  });
  result.try_set_value(server);
  return result.future();
}

}  // namespace trellis
