// Bootstrap: resolving and connecting client channels (see bootstrap.hpp).
#include <trellis/transport/bootstrap.hpp>

#include <vector>

#include <asio/ip/tcp.hpp>

#include <trellis/pipeline/error.hpp>

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

struct ConnectAttempt {
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
  auto ch = SocketChannel::create(*attempt->loop);
  ch->set_options(attempt->options);
  attempt->options.apply_to_config(*ch);
  // On the loop: the channel is registered, then connected.
  auto handler = attempt->handler;
  auto registered = ch->register_channel([handler](SocketChannel& c) {
    if (handler) c.pipeline().add_last(handler);
  });
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

Future<std::shared_ptr<Channel>> Bootstrap::connect(const SocketAddress& remote) {
  if (!group_) throw IllegalStateError("Bootstrap: group() not set");
  EventLoop& loop = group_->next();
  auto attempt = std::make_shared<detail::ConnectAttempt>(detail::ConnectAttempt{
      &loop, options_, handler_, {remote}, Promise<std::shared_ptr<Channel>>(&loop), {}});
  auto future = attempt->result.future();
  detail::connect_next(std::move(attempt), 0);
  return future;
}

Future<std::shared_ptr<Channel>> Bootstrap::connect(const std::string& host, std::uint16_t port) {
  if (auto address = detail::parse_address(host, port)) return connect(*address);
  if (!group_) throw IllegalStateError("Bootstrap: group() not set");
  EventLoop& loop = group_->next();
  auto attempt = std::make_shared<detail::ConnectAttempt>(detail::ConnectAttempt{
      &loop, options_, handler_, {}, Promise<std::shared_ptr<Channel>>(&loop), {}});
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

}  // namespace trellis
