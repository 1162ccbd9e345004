// DatagramChannel: reactive datagram reads, one sendmsg per packet, multicast membership (see
// datagram_channel.hpp).
#include <trellis/transport/datagram_channel.hpp>
#include <trellis/transport/detail/register_on_loop.hpp>

#include "direct_syscalls.hpp"
#include "reactor_io.hpp"

#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <spdlog/spdlog.h>
#include <asio/post.hpp>

#include <trellis/pipeline/error.hpp>

namespace trellis {

namespace {

std::error_code last_error() { return {errno, std::system_category()}; }

std::optional<SocketAddress> query_address(int fd, bool peer) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  auto* sa = reinterpret_cast<sockaddr*>(&ss);
  const int r = peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len);
  if (r != 0) return std::nullopt;
  try {
    return SocketAddress::from_sockaddr(sa, len);
  } catch (...) {
    return std::nullopt;
  }
}

int family_of(const SocketAddress& address) {
  if (!address.is_ip()) {
    throw InvalidArgumentError("a DatagramChannel needs an IP address, not " + address.to_string());
  }
  return address.sockaddr_ptr()->sa_family;
}

}  // namespace

std::shared_ptr<DatagramChannel> DatagramChannel::create(EventLoop& loop) {
  // Deleted on its loop, as SocketChannel: outbound tasks posted from other threads before the
  // last reference was dropped still find the channel alive.
  return std::shared_ptr<DatagramChannel>(
      new DatagramChannel(PrivateTag{}, loop), [&loop](DatagramChannel* ch) {
        detail::delete_on_loop(
            loop, [owned = std::unique_ptr<DatagramChannel>(ch)]() mutable { owned.reset(); });
      });
}

DatagramChannel::DatagramChannel(PrivateTag, EventLoop& loop)
    : Channel(loop), loop_(loop), io_(loop.io_context()) {}

DatagramChannel::~DatagramChannel() {
  if (!io_->socket.is_open() && fd_ >= 0) ::close(fd_);
}

std::optional<SocketAddress> DatagramChannel::local_address() const { return local_.load(); }
std::optional<SocketAddress> DatagramChannel::remote_address() const { return remote_.load(); }

void DatagramChannel::set_options(const ChannelOptions& options) {
  options_ = options;
  if (options.max_datagram_size) set_max_datagram_size(*options.max_datagram_size);
}

void DatagramChannel::set_max_datagram_size(int size) {
  if (size < 1 || size > kMaxDatagramSize) {
    throw InvalidArgumentError("max_datagram_size must be in 1.." +
                               std::to_string(kMaxDatagramSize) + ", not " + std::to_string(size));
  }
  max_datagram_size_ = size;
}

Future<void> DatagramChannel::register_channel(UniqueFunction<void(DatagramChannel&)> before) {
  return detail::register_on_loop<DatagramChannel>(loop_, shared_from_this(), std::move(before));
}

void DatagramChannel::do_register() {
  track(loop_);  // first: throws when the loop is shutting down
  self_ = shared_from_this();
  if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("[id: 0x{}] registered on {}", id().as_short_text(), loop_.name());
  }
}

void DatagramChannel::ensure_socket(int family) {
  if (io_->socket.is_open()) return;
  fd_ = ::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw IoError(last_error(), "socket");
  try {
    io_->socket.assign(fd_, true);
  } catch (...) {
    fd_ = -1;  // assign closed it
    throw;
  }
  if (options_) options_->apply_to_socket(fd_, false);
}

void DatagramChannel::do_bind(const SocketAddress& local) {
  if (const auto& bound = local_.loop_value()) {
    throw IllegalStateError("channel is already bound to " + bound->to_string());
  }
  ensure_socket(family_of(local));
  if (::bind(fd_, local.sockaddr_ptr(), local.length()) != 0) {
    throw IoError(last_error(), "bind to " + local.to_string());
  }
  local_.store(query_address(fd_, false));
  state_.store(kActive, std::memory_order_release);  // Channel::Unsafe fires channel_active
}

void DatagramChannel::do_connect(const SocketAddress& remote,
                                 const std::optional<SocketAddress>& local,
                                 ChannelPromise promise) {
  if (state_.load() == kClosed) throw ClosedChannelError();
  if (connected_.load()) throw IllegalStateError("channel is already connected");
  if (local) do_bind(*local);
  ensure_socket(family_of(remote));
  // Connecting a UDP socket only sets its default peer (and binds an ephemeral port): it
  // completes at once.
  if (::connect(fd_, remote.sockaddr_ptr(), remote.length()) != 0) {
    throw IoError(last_error(), "connect to " + remote.to_string());
  }
  local_.store(query_address(fd_, false));
  remote_.store(query_address(fd_, true));
  connected_.store(true, std::memory_order_release);
  const bool was_active = state_.exchange(kActive, std::memory_order_acq_rel) == kActive;
  if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("[id: 0x{}] connected to {}", id().as_short_text(), remote.to_string());
  }
  promise.try_set_value();
  if (!was_active) pipeline().fire_channel_active();
}

void DatagramChannel::do_disconnect() {
  if (!connected_.load() || fd_ < 0) return;
  sockaddr unspecified{};
  unspecified.sa_family = AF_UNSPEC;
  if (::connect(fd_, &unspecified, sizeof unspecified) != 0) {
    throw IoError(last_error(), "disconnect");
  }
  connected_.store(false, std::memory_order_release);
  remote_.store(std::nullopt);
  local_.store(query_address(fd_, false));
}

void DatagramChannel::do_close() {
  const int old = state_.exchange(kClosed, std::memory_order_acq_rel);
  if (old == kClosed) return;
  connected_.store(false, std::memory_order_release);
  if (io_->socket.is_open()) {
    io_->socket.close();  // closes fd_ and aborts the waits
  } else if (fd_ >= 0) {
    ::close(fd_);
  }
  fd_ = -1;
  if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("[id: 0x{}] closed", id().as_short_text());
  }
}

void DatagramChannel::close_for_shutdown() { unsafe().close(ChannelPromise{}); }

void DatagramChannel::do_deregister() {
  untrack();
  io_->socket.close();
  // Channel::Unsafe still fires channel_unregistered after this returns: release the self
  // reference from a later handler.
  if (self_) asio::post(loop_.io_context(), [self = std::move(self_)] {});
}

// --- reading ----------------------------------------------------------------------------------

void DatagramChannel::do_begin_read() {
  if (!is_active()) return;
  read_pending_ = true;
  arm_read();
}

void DatagramChannel::arm_read() {
  if (waiting_read_ || !io_->socket.is_open()) return;
  waiting_read_ = true;
  if (maybe_more_) {
    // Datagrams may be left from the last wake-up and no edge will announce them: read on the
    // next turn of the loop (after other channels' work).
    maybe_more_ = false;
    asio::post(loop_.io_context(), [self = shared_from_this()] { self->on_readable({}); });
    return;
  }
  io_->read_wait.prepare([this] { return shared_from_this(); }, this,
                         &DatagramChannel::on_read_ready);
  io_->socket.start_read_wait(io_->read_wait);
}

void DatagramChannel::on_read_ready(void* self, const std::error_code& ec) {
  static_cast<DatagramChannel*>(self)->on_readable(ec);
}

void DatagramChannel::on_readable(const std::error_code& ec) {
  waiting_read_ = false;
  if (ec || !is_active()) return;
  if (!read_pending_) {
    maybe_more_ = true;  // woken, but nobody wants to read now: the edge is spent
    return;
  }
  read_pending_ = false;
  // A handler's read() during the loop only marks the wish: the loop goes on reading, and arming
  // a wait now, before the socket is drained, could miss datagrams that no new edge announces.
  waiting_read_ = true;
  ByteBufAllocator& alloc = config().allocator();
  const int max_reads = std::max(1, config().max_messages_per_read());
  const auto size = static_cast<std::size_t>(max_datagram_size_);
  int attempts = 0;
  int reads = 0;
  bool drained = false;
  ByteBuf buf;  // kept for the next datagram when one was dropped
  // Every datagram, dropped or failed ones too, counts against the limit: a flood of them
  // cannot keep the loop here.
  while (attempts < max_reads) {
    if (buf.capacity() < size) buf = alloc.buffer(size, size);
    sockaddr_storage from{};
    iovec iov{buf.writable_span().data(), size};
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof from;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    const ssize_t n = detail::direct_recvmsg(fd_, &msg, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        drained = true;
        break;
      }
      ++attempts;
      // ECONNREFUSED (an earlier send met a closed port), and the like: reported, not fatal.
      pipeline().fire_exception_caught(std::make_exception_ptr(IoError(last_error(), "receive")));
      if (!is_active()) break;
      continue;
    }
    ++attempts;
    if ((msg.msg_flags & MSG_TRUNC) != 0) {
      truncated_.fetch_add(1, std::memory_order_relaxed);
      spdlog::debug("[id: 0x{}] dropped a datagram longer than max_datagram_size ({} bytes)",
                    id().as_short_text(), size);
      continue;
    }
    buf.set_writer_index(static_cast<std::size_t>(n));
    SocketAddress sender =
        msg.msg_namelen > 0
            ? SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&from), msg.msg_namelen)
            : SocketAddress();
    ++reads;
    pipeline().fire_channel_read(Message(DatagramPacket{
        std::move(buf), local_.loop_value().value_or(SocketAddress()), std::move(sender)}));
    buf = ByteBuf();
    if (!is_active()) break;
    // A handler turned auto_read off (back-pressure): no more reads in this wake-up either,
    // unless it asked for one with read().
    if (!read_pending_ && !config().auto_read()) break;
  }
  buf = ByteBuf();  // an idle channel holds no receive buffer
  waiting_read_ = false;
  maybe_more_ = !drained;
  if (reads > 0) pipeline().fire_channel_read_complete();  // with auto_read: read() again
  if (!is_active()) return;
  if (reads == 0) read_pending_ = true;  // woken without a datagram: the wish stands
  if (read_pending_) arm_read();         // a no-op when read_complete armed it already
}

// --- writing ----------------------------------------------------------------------------------

Message DatagramChannel::filter_outbound_message(Message&& msg) {
  if (msg.is<DatagramPacket>()) return std::move(msg);
  if (msg.is<ByteBuf>()) {
    if (!connected_.load()) {
      throw IllegalStateError(
          "a DatagramChannel that is not connected writes DatagramPackets, not ByteBufs");
    }
    return std::move(msg);
  }
  throw InvalidArgumentError(
      std::string("a DatagramChannel writes DatagramPacket or ByteBuf, not ") +
      std::string(msg.type_name()));
}

void DatagramChannel::arm_write() {
  if (waiting_write_ || !io_->socket.is_open()) return;
  waiting_write_ = true;
  io_->write_wait.prepare([this] { return shared_from_this(); }, this,
                          &DatagramChannel::on_write_ready);
  io_->socket.start_write_wait(io_->write_wait);
}

void DatagramChannel::on_write_ready(void* self, const std::error_code& ec) {
  auto* ch = static_cast<DatagramChannel*>(self);
  ch->waiting_write_ = false;
  if (ec || !ch->is_active()) return;
  ch->unsafe().write_flushed();
}

void DatagramChannel::do_write(ChannelOutboundBuffer& out) {
  if (waiting_write_) return;  // the writability wait continues
  while (Message* current = out.current()) {
    if (!io_->socket.is_open()) return;  // a promise listener closed the channel
    const ByteBuf* content = nullptr;
    const SocketAddress* to = nullptr;
    if (auto* packet = current->try_get<DatagramPacket>()) {
      content = &packet->content;
      if (packet->recipient.length() > 0) to = &packet->recipient;
    } else {
      content = current->try_get<ByteBuf>();  // filter_outbound_message let nothing else in
    }
    const auto span = content->readable_span();
    iovec iov{const_cast<std::byte*>(span.data()), span.size()};
    msghdr msg{};
    if (to != nullptr) {
      msg.msg_name = const_cast<sockaddr*>(to->sockaddr_ptr());
      msg.msg_namelen = to->length();
    }
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    const ssize_t r = detail::direct_sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (r >= 0) {
      out.remove();  // a datagram goes whole or not at all
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      arm_write();
      return;
    }
    // This datagram failed (ECONNREFUSED after an ICMP "port unreachable", EMSGSIZE, EACCES for
    // a broadcast without SO_BROADCAST...): its promise fails, the pipeline hears of it, the
    // channel stays open and the next datagram goes on.
    const std::string where = to != nullptr          ? " to " + to->to_string()
                              : remote_.loop_value() ? " to " + remote_.loop_value()->to_string()
                                                     : std::string();
    auto error = std::make_exception_ptr(IoError(last_error(), "send" + where));
    out.remove(error);
    pipeline().fire_exception_caught(error);
  }
}

// --- multicast --------------------------------------------------------------------------------

Future<void> DatagramChannel::join_group(const SocketAddress& group,
                                         std::optional<std::string> interface) {
  return change_membership(group, std::move(interface), true);
}

Future<void> DatagramChannel::leave_group(const SocketAddress& group,
                                          std::optional<std::string> interface) {
  return change_membership(group, std::move(interface), false);
}

Future<void> DatagramChannel::change_membership(const SocketAddress& group,
                                                std::optional<std::string> interface, bool join) {
  Promise<void> done(&loop_);
  auto task = [self = shared_from_this(), done, group, interface = std::move(interface),
               join]() mutable {
    try {
      self->do_change_membership(group, interface, join);
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  };
  if (loop_.in_event_loop()) {
    task();
  } else {
    loop_.execute(std::move(task));
  }
  return done.future();
}

void DatagramChannel::do_change_membership(const SocketAddress& group,
                                           const std::optional<std::string>& interface, bool join) {
  if (!is_open()) throw ClosedChannelError();
  if (fd_ < 0) throw IllegalStateError("join_group/leave_group: bind the channel first");
  const std::string what = std::string(join ? "join" : "leave") + " group " + group.ip() +
                           (interface ? " on " + *interface : std::string());
  unsigned index = 0;
  if (interface) {
    index = ::if_nametoindex(interface->c_str());
    if (index == 0) throw IoError(last_error(), what);
  }
  int r;
  if (group.kind() == SocketAddress::Kind::kIpv4) {
    ip_mreqn request{};
    request.imr_multiaddr = reinterpret_cast<const sockaddr_in*>(group.sockaddr_ptr())->sin_addr;
    request.imr_ifindex = static_cast<int>(index);
    r = ::setsockopt(fd_, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &request,
                     sizeof request);
  } else if (group.kind() == SocketAddress::Kind::kIpv6) {
    ipv6_mreq request{};
    request.ipv6mr_multiaddr =
        reinterpret_cast<const sockaddr_in6*>(group.sockaddr_ptr())->sin6_addr;
    request.ipv6mr_interface = index;
    r = ::setsockopt(fd_, IPPROTO_IPV6, join ? IPV6_JOIN_GROUP : IPV6_LEAVE_GROUP, &request,
                     sizeof request);
  } else {
    throw InvalidArgumentError(what + ": not an IP address");
  }
  if (r != 0) throw IoError(last_error(), what);
}

}  // namespace trellis
