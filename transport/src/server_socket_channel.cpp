// ServerSocketChannel: listening, accepting, EMFILE back-off (see server_socket_channel.hpp).
#include <trellis/transport/detail/reactor_descriptor.hpp>
#include <trellis/transport/detail/register_on_loop.hpp>
#include <trellis/transport/server_socket_channel.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>
#include <asio/post.hpp>

#include <trellis/pipeline/error.hpp>

namespace trellis {

namespace {
std::error_code last_error() { return {errno, std::system_category()}; }

// True for 0.0.0.0 and ::, whose accepted sockets each have their own local address.
bool is_wildcard(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in&>(ss).sin_addr.s_addr == htonl(INADDR_ANY);
  }
  if (ss.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr;
    return IN6_IS_ADDR_UNSPECIFIED(&a) != 0;
  }
  return false;
}

std::optional<SocketAddress> peer_address(const sockaddr_storage& ss, socklen_t len) {
  try {
    return SocketAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&ss), len);
  } catch (...) {
    return std::nullopt;
  }
}
}  // namespace

// The listening socket on the loop's reactor and its reusable readiness wait: re-arming it after
// accepting until EAGAIN costs no system call (Asio's async_wait re-registers the descriptor
// with an epoll_ctl each time).
struct ServerSocketChannel::Listener {
  Listener(asio::io_context& context, int fd) : socket(context) { socket.assign(fd, true); }

  detail::ReactorDescriptor socket;
  detail::ReadinessWait wait;
};

std::shared_ptr<ServerSocketChannel> ServerSocketChannel::create(EventLoop& loop,
                                                                 ChildLoopChooser chooser) {
  return std::shared_ptr<ServerSocketChannel>(
      new ServerSocketChannel(PrivateTag{}, loop, std::move(chooser)),
      [&loop](ServerSocketChannel* ch) {
        detail::delete_on_loop(
            loop, [owned = std::unique_ptr<ServerSocketChannel>(ch)]() mutable { owned.reset(); });
      });
}

ServerSocketChannel::ServerSocketChannel(PrivateTag, EventLoop& loop, ChildLoopChooser chooser)
    : Channel(loop), loop_(loop), chooser_(std::move(chooser)) {}

ServerSocketChannel::~ServerSocketChannel() {
  if (!socket_ && fd_ >= 0) ::close(fd_);
}

Future<void> ServerSocketChannel::register_channel(
    UniqueFunction<void(ServerSocketChannel&)> before) {
  return detail::register_on_loop<ServerSocketChannel>(loop_, shared_from_this(),
                                                       std::move(before));
}

void ServerSocketChannel::do_register() {
  track(loop_);  // first: throws when the loop is shutting down
  self_ = shared_from_this();
}

void ServerSocketChannel::do_bind(const SocketAddress& local) {
  if (fd_ >= 0) throw IllegalStateError("server channel is already bound");
  if (local.length() == 0) throw InvalidArgumentError("cannot bind to " + local.to_string());
  fd_ = ::socket(local.sockaddr_ptr()->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw IoError(last_error(), "socket");
  try {
    socket_ = std::make_unique<Listener>(loop_.io_context(), fd_);
  } catch (...) {
    fd_ = -1;  // closed by the failed registration
    throw;
  }
  options_.apply_to_socket(fd_, true);
  if (::bind(fd_, local.sockaddr_ptr(), local.length()) != 0) {
    throw IoError(last_error(), "bind to " + local.to_string());
  }
  if (::listen(fd_, options_.so_backlog.value_or(SOMAXCONN)) != 0) {
    throw IoError(last_error(), "listen on " + local.to_string());
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
    local_.store(SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len));
    if (!is_wildcard(ss)) child_local_ = local_.loop_value();
  }
  child_family_ = local.sockaddr_ptr()->sa_family;
  state_.store(kActive, std::memory_order_release);
  spdlog::debug("[id: 0x{}] listening on {}", id().as_short_text(),
                local_.loop_value() ? local_.loop_value()->to_string() : local.to_string());
}

void ServerSocketChannel::do_connect(const SocketAddress&, const std::optional<SocketAddress>&,
                                     ChannelPromise) {
  throw IllegalStateError("a server channel does not connect");
}

void ServerSocketChannel::do_write(ChannelOutboundBuffer& out) {
  out.fail_flushed(std::make_exception_ptr(IllegalStateError("a server channel does not write")),
                   true);
}

void ServerSocketChannel::do_close() {
  if (state_.exchange(kClosed) == kClosed) return;
  if (socket_) {
    socket_->socket.close();
  } else if (fd_ >= 0) {
    ::close(fd_);
  }
  fd_ = -1;
  spdlog::debug("[id: 0x{}] server channel closed", id().as_short_text());
}

void ServerSocketChannel::close_for_shutdown() { unsafe().close(ChannelPromise{}); }

void ServerSocketChannel::do_deregister() {
  untrack();
  // Closed, not destroyed: an aborted accept wait may still be queued, and the channel it keeps
  // alive owns the wait.
  if (socket_) socket_->socket.close();
  if (self_) asio::post(loop_.io_context(), [self = std::move(self_)] {});
}

void ServerSocketChannel::do_begin_read() {
  if (!is_active()) return;
  read_pending_ = true;
  if (!backing_off_.load(std::memory_order_relaxed)) arm_accept();
}

void ServerSocketChannel::arm_accept() {
  if (waiting_ || !socket_ || !socket_->socket.is_open()) return;
  waiting_ = true;
  if (accept_maybe_more_) {
    // The last batch stopped before EAGAIN: no edge will announce the connections left in the
    // backlog, so accept on the next turn of the loop.
    asio::post(loop_.io_context(), [self = shared_from_this()] { self->on_acceptable({}); });
    return;
  }
  socket_->wait.prepare([this] { return shared_from_this(); }, this,
                        [](void* self, const std::error_code& ec) {
                          static_cast<ServerSocketChannel*>(self)->on_acceptable(ec);
                        });
  socket_->socket.start_read_wait(socket_->wait);
}

void ServerSocketChannel::on_acceptable(const std::error_code& ec) {
  waiting_ = false;
  if (ec || !is_active() || !read_pending_) return;
  read_pending_ = false;
  const int max_accepts = std::max(1, config().max_messages_per_read());
  int accepted = 0;
  int backoff_error = 0;
  bool drained = false;
  while (accepted < max_accepts) {
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof peer;
    const int fd =
        ::accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &peer_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      ++accepted;
      EventLoop& child_loop = chooser_ ? chooser_() : loop_;
      std::shared_ptr<SocketChannel> child;
      try {
        child = SocketChannel::create_accepted(
            child_loop, this, fd,
            SocketChannel::Accepted{child_local_, peer_address(peer, peer_len), child_family_});
      } catch (...) {
        ::close(fd);
        pipeline().fire_exception_caught(std::current_exception());
        continue;
      }
      pipeline().fire_channel_read(Message(std::move(child)));
      if (!is_active()) break;
      // A handler turned auto_read off (an AsyncServerChannel's accept buffer is full): the
      // rest of the batch waits in the backlog, unless it asked for more with read().
      if (!read_pending_ && !config().auto_read()) break;
      continue;
    }
    const int e = errno;
    if (e == EINTR || e == ECONNABORTED || e == EPROTO) continue;
    if (e == EAGAIN || e == EWOULDBLOCK) {
      drained = true;
      break;
    }
    if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
      backoff_error = e;
      break;
    }
    pipeline().fire_exception_caught(
        std::make_exception_ptr(IoError(std::error_code(e, std::system_category()), "accept")));
    break;
  }
  accept_maybe_more_ = !drained;
  if (backoff_error) back_off(backoff_error);
  if (accepted > 0) pipeline().fire_channel_read_complete();
  if (!is_active() || backing_off_.load(std::memory_order_relaxed)) return;
  if (accepted == 0) {
    read_pending_ = true;
    arm_accept();
  }
}

void ServerSocketChannel::back_off(int error) {
  backing_off_.store(true, std::memory_order_relaxed);
  backoffs_.fetch_add(1);
  const auto now = loop_.current_time_nanos();
  if (now - last_backoff_log_ >= 1'000'000'000) {
    last_backoff_log_ = now;
    spdlog::warn("[id: 0x{}] accept failed ({}); pausing accepts for {} ms", id().as_short_text(),
                 std::strerror(error), kAcceptBackoff.count());
  }
  std::weak_ptr<ServerSocketChannel> weak = shared_from_this();
  loop_.schedule(kAcceptBackoff, [weak] {
    auto self = weak.lock();
    if (!self) return;
    self->backing_off_.store(false, std::memory_order_relaxed);
    if (!self->is_active()) return;
    // Resume whether or not a read() came in meanwhile: the pending connections still wait.
    if (self->config().auto_read()) self->read_pending_ = true;
    if (self->read_pending_) self->arm_accept();
  });
}

}  // namespace trellis
