// Bootstrap: resolving and connecting client channels (see bootstrap.hpp).
#include <trellis/transport/bootstrap.hpp>

#include <vector>

#include <asio/ip/tcp.hpp>
#include <asio/ip/udp.hpp>

#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/promise.hpp>

namespace trellis {

namespace detail {

std::optional<SocketAddress> parse_address(const std::string& host, std::uint16_t port) {
  if (host.rfind("unix:", 0) == 0) return SocketAddress::from_unix_path(host.substr(5));
  std::error_code ec;
  const auto ip = asio::ip::make_address(host, ec);
  if (ec) return std::nullopt;
  return SocketAddress::from_ip(ip.to_string(), port);
}

namespace {

// A new channel of kind C with the options, registered on loop with the handler.
template <class C>
std::pair<std::shared_ptr<Channel>, Future<void>> make_registered(
    EventLoop& loop, const ChannelOptions& options, std::shared_ptr<ChannelHandler> handler) {
  auto ch = C::create(loop);
  ch->set_options(options);
  options.apply_to_config(*ch);
  auto registered = ch->register_channel([handler = std::move(handler)](C& c) {
    if (handler) c.pipeline().add_last(handler);
  });
  return {std::move(ch), std::move(registered)};
}

struct ConnectAttempt {
  bool datagram;
  EventLoop* loop;
  ChannelOptions options;
  std::shared_ptr<ChannelHandler> handler;
  std::vector<SocketAddress> addresses;
  Promise<std::shared_ptr<Channel>> result;
  std::exception_ptr last_error;
};

void connect_next(std::shared_ptr<ConnectAttempt> attempt, std::size_t index) {
  if (index >= attempt->addresses.size()) {
    attempt->result.try_set_exception(
        attempt->last_error
            ? attempt->last_error
            : std::make_exception_ptr(InvalidArgumentError("no address to connect")));
    return;
  }
  // On the loop: the channel is registered, then connected.
  auto [ch, registered] =
      attempt->datagram
          ? make_registered<DatagramChannel>(*attempt->loop, attempt->options, attempt->handler)
          : make_registered<SocketChannel>(*attempt->loop, attempt->options, attempt->handler);
  // Queued after the registration task (execute is FIFO).
  attempt->loop->execute([attempt, ch, index, registered] {
    if (!registered.is_success()) {
      attempt->result.try_set_exception(
          registered.is_done() ? registered.cause()
                               : std::make_exception_ptr(ClosedChannelError("not registered")));
      return;
    }
    auto promise = ch->new_promise();
    promise.future().add_listener([attempt, ch, index](const Future<void>& f) {
      if (f.is_success()) {
        attempt->result.try_set_value(ch);
        return;
      }
      attempt->last_error = f.cause();
      ch->unsafe().close(ChannelPromise{});
      connect_next(attempt, index + 1);
    });
    ch->connect(attempt->addresses[index], promise);
  });
}

}  // namespace
}  // namespace detail

EventLoop& Bootstrap::next_loop() {
  if (loop_) return *loop_;
  if (!group_) throw IllegalStateError("Bootstrap: group() not set");
  return group_->next();
}

Future<std::shared_ptr<Channel>> Bootstrap::connect(const SocketAddress& remote) {
  EventLoop& loop = next_loop();
  auto attempt = std::make_shared<detail::ConnectAttempt>(
      detail::ConnectAttempt{datagram_,
                             &loop,
                             options_,
                             handler_,
                             {remote},
                             Promise<std::shared_ptr<Channel>>(&loop),
                             {}});
  auto future = attempt->result.future();
  detail::connect_next(std::move(attempt), 0);
  return future;
}

Future<std::shared_ptr<Channel>> Bootstrap::connect(const std::string& host, std::uint16_t port) {
  if (auto address = detail::parse_address(host, port)) return connect(*address);
  EventLoop& loop = next_loop();
  auto attempt = std::make_shared<detail::ConnectAttempt>(detail::ConnectAttempt{
      datagram_, &loop, options_, handler_, {}, Promise<std::shared_ptr<Channel>>(&loop), {}});
  auto future = attempt->result.future();
  loop.execute([attempt, host, port] {
    auto resolver = std::make_shared<asio::ip::tcp::resolver>(attempt->loop->io_context());
    resolver->async_resolve(
        host, std::to_string(port),
        [attempt, resolver, host](const std::error_code& ec,
                                  const asio::ip::tcp::resolver::results_type& results) {
          if (ec) {
            attempt->result.try_set_exception(
                std::make_exception_ptr(IoError(ec, "resolve " + host)));
            return;
          }
          for (const auto& entry : results) {
            const auto ep = entry.endpoint();
            attempt->addresses.push_back(SocketAddress::from_sockaddr(ep.data(), ep.size()));
          }
          detail::connect_next(attempt, 0);
        });
  });
  return future;
}

Future<std::shared_ptr<Channel>> Bootstrap::bind(const SocketAddress& local) {
  if (!group_) throw IllegalStateError("Bootstrap: group() not set");
  if (!datagram_) {
    throw IllegalStateError(
        "Bootstrap::bind needs channel<DatagramChannel>(); a TCP server is a ServerBootstrap");
  }
  EventLoop& loop = group_->next();
  Promise<std::shared_ptr<Channel>> result(&loop);
  auto [ch, registered] = detail::make_registered<DatagramChannel>(loop, options_, handler_);
  // Queued after the registration task (execute is FIFO).
  loop.execute([result, ch = ch, registered = registered, local]() mutable {
    if (!registered.is_success()) {
      result.try_set_exception(registered.is_done()
                                   ? registered.cause()
                                   : std::make_exception_ptr(ClosedChannelError("not registered")));
      return;
    }
    auto promise = ch->new_promise();
    promise.future().add_listener([result, ch](const Future<void>& f) mutable {
      if (f.is_success()) {
        result.try_set_value(ch);
        return;
      }
      result.try_set_exception(f.cause());
      ch->unsafe().close(ChannelPromise{});
    });
    ch->bind(local, promise);
  });
  return result.future();
}

Future<std::shared_ptr<Channel>> Bootstrap::bind(const std::string& host, std::uint16_t port) {
  if (auto address = detail::parse_address(host, port)) return bind(*address);
  // A name: resolved here, on the calling thread (binding is a start-up step), as
  // ServerBootstrap::bind does.
  asio::io_context io;
  asio::ip::udp::resolver resolver(io);
  std::error_code ec;
  const auto results =
      resolver.resolve(host, std::to_string(port), asio::ip::udp::resolver::passive, ec);
  if (ec || results.empty()) {
    return make_failed_future<std::shared_ptr<Channel>>(std::make_exception_ptr(
        IoError(ec ? ec : std::make_error_code(std::errc::invalid_argument), "resolve " + host)));
  }
  const auto ep = results.begin()->endpoint();
  return bind(SocketAddress::from_sockaddr(ep.data(), ep.size()));
}

}  // namespace trellis
