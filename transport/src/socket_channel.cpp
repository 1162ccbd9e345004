// SocketChannel: reactive reads, gathering writes, connect, half-close (see socket_channel.hpp).
#include <trellis/transport/detail/register_on_loop.hpp>
#include <trellis/transport/socket_channel.hpp>

#include "direct_syscalls.hpp"
#include "reactor_io.hpp"

#include <signal.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include <spdlog/spdlog.h>
#include <asio/post.hpp>

#include <trellis/pipeline/channel_events.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/pipeline/error.hpp>

namespace trellis {

namespace {

constexpr std::size_t kMaxIovecs = 64;
// The most one sendfile(2) call transfers on Linux.
constexpr std::uint64_t kMaxSendfileBytes = 0x7ffff000;
// sendfile calls per write turn. A reader as fast as the writer (loopback) keeps the socket
// writable, and a large file would hold the loop for the whole transfer; after this many calls
// the rest is posted behind the loop's other work (Netty's writeSpinCount is 16 too).
constexpr int kSendfileCallsPerTurn = 16;

// sendfile has no MSG_NOSIGNAL: writing to a socket the peer reset raises SIGPIPE, whose default
// action ends the process. The first file sent on a thread blocks SIGPIPE in that thread (the
// loop's own thread, which runs no user code that expects the signal), so EPIPE is returned
// instead; consume_sigpipe() takes the pending signal back after an EPIPE.
void block_sigpipe_on_this_thread() noexcept {
  static thread_local bool blocked = false;
  if (blocked) return;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  blocked = true;
}

void consume_sigpipe() noexcept {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  const timespec zero{0, 0};
  while (sigtimedwait(&set, nullptr, &zero) > 0) {
  }
}

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

// Deleted on its loop: outbound tasks posted from other threads before the last reference was
// dropped still find the channel (and its pipeline) alive.
std::shared_ptr<SocketChannel> owned_by_loop(EventLoop& loop, SocketChannel* channel) {
  return std::shared_ptr<SocketChannel>(channel, [&loop](SocketChannel* ch) {
    detail::delete_on_loop(
        loop, [owned = std::unique_ptr<SocketChannel>(ch)]() mutable { owned.reset(); });
  });
}

}  // namespace

std::shared_ptr<SocketChannel> SocketChannel::create(EventLoop& loop) {
  return create_accepted(loop, nullptr, -1);
}

std::shared_ptr<SocketChannel> SocketChannel::create_accepted(EventLoop& loop, Channel* parent,
                                                              int fd) {
  return owned_by_loop(loop, new SocketChannel(PrivateTag{}, loop, parent, fd));
}

std::shared_ptr<SocketChannel> SocketChannel::create_accepted(EventLoop& loop, Channel* parent,
                                                              int fd, Accepted accepted) {
  return owned_by_loop(loop,
                       new SocketChannel(PrivateTag{}, loop, parent, fd, std::move(accepted)));
}

SocketChannel::SocketChannel(PrivateTag, EventLoop& loop, Channel* parent, int fd)
    : Channel(loop, parent), loop_(loop), io_(loop.io_context()), fd_(fd) {
  if (fd_ >= 0) {
    state_.store(kActive, std::memory_order_release);
    local_.store(query_address(fd_, false));
    remote_.store(query_address(fd_, true));
  }
}

SocketChannel::SocketChannel(PrivateTag, EventLoop& loop, Channel* parent, int fd,
                             Accepted accepted)
    : Channel(loop, parent),
      loop_(loop),
      io_(loop.io_context()),
      fd_(fd),
      family_(accepted.family),
      sole_descriptor_(true) {
  state_.store(kActive, std::memory_order_release);
  local_.store(accepted.local ? std::move(accepted.local) : query_address(fd_, false));
  remote_.store(accepted.remote ? std::move(accepted.remote) : query_address(fd_, true));
}

SocketChannel::~SocketChannel() {
  // Registered channels close their descriptor on the loop; this is for never-registered ones.
  if (!io_->socket.is_open() && fd_ >= 0) ::close(fd_);
}

std::optional<SocketAddress> SocketChannel::local_address() const { return local_.load(); }
std::optional<SocketAddress> SocketChannel::remote_address() const { return remote_.load(); }

void SocketChannel::set_options(const ChannelOptions& options) {
  set_options(std::make_shared<const ChannelOptions>(options));
}

void SocketChannel::set_options(std::shared_ptr<const ChannelOptions> options) {
  options_ = std::move(options);
  if (options_ && options_->allow_half_closure) {
    set_allow_half_closure(*options_->allow_half_closure);
  }
}

void SocketChannel::apply_options() {
  static const ChannelOptions defaults;  // TCP_NODELAY on
  const ChannelOptions& options = options_ ? *options_ : defaults;
  if (family_ != 0) {
    options.apply_to_socket(fd_, false, family_, SOCK_STREAM);
  } else {
    options.apply_to_socket(fd_, false);
  }
}

Future<void> SocketChannel::register_channel(UniqueFunction<void(SocketChannel&)> before) {
  return detail::register_on_loop<SocketChannel>(loop_, shared_from_this(), std::move(before));
}

void SocketChannel::do_register() {
  track(loop_);  // first: throws when the loop is shutting down
  if (fd_ >= 0 && !io_->socket.is_open()) {
    try {
      apply_options();
      io_->socket.assign(fd_, sole_descriptor_);
    } catch (...) {
      untrack();  // not registered: nothing else would untrack it
      throw;
    }
  }
  self_ = shared_from_this();
  if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("[id: 0x{}] registered on {}", id().as_short_text(), loop_.name());
  }
}

void SocketChannel::ensure_socket(int family) {
  if (io_->socket.is_open()) return;
  fd_ = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw IoError(last_error(), "socket");
  family_ = family;
  sole_descriptor_ = true;
  try {
    io_->socket.assign(fd_, true);
  } catch (...) {
    fd_ = -1;  // assign closed it
    throw;
  }
  apply_options();
}

void SocketChannel::do_bind(const SocketAddress& local) {
  ensure_socket(local.sockaddr_ptr()->sa_family);
  if (::bind(fd_, local.sockaddr_ptr(), local.length()) != 0) {
    throw IoError(last_error(), "bind to " + local.to_string());
  }
  local_.store(query_address(fd_, false));
}

void SocketChannel::do_connect(const SocketAddress& remote,
                               const std::optional<SocketAddress>& local, ChannelPromise promise) {
  if (state_.load() != kOpen) throw IllegalStateError("channel is already connected or connecting");
  if (remote.length() == 0) throw InvalidArgumentError("cannot connect to " + remote.to_string());
  if (local) do_bind(*local);
  ensure_socket(remote.sockaddr_ptr()->sa_family);
  connect_ = std::make_unique<ConnectState>(ConnectState{std::move(promise), std::nullopt, remote});
  int r;
  do {
    r = ::connect(fd_, remote.sockaddr_ptr(), remote.length());
  } while (r != 0 && errno == EINTR);
  if (r == 0) {
    finish_connect({});
    return;
  }
  if (errno != EINPROGRESS) {
    connect_.reset();
    throw IoError(last_error(), "connect to " + remote.to_string());
  }
  state_.store(kConnecting, std::memory_order_release);
  const auto timeout = config().connect_timeout();
  if (timeout.count() > 0) {
    std::weak_ptr<SocketChannel> weak = shared_from_this();
    connect_->timeout = loop_.schedule(timeout, [weak] {
      auto self = weak.lock();
      if (!self || self->state_.load() != kConnecting || !self->connect_) return;
      const std::unique_ptr<ConnectState> state = std::move(self->connect_);
      state->promise.try_set_exception(std::make_exception_ptr(ConnectTimeoutError(
          std::make_error_code(std::errc::timed_out), "connect to " + state->remote.to_string())));
      self->unsafe().close(ChannelPromise{});
    });
  }
  io_->write_wait.prepare([this] { return shared_from_this(); }, this,
                          &SocketChannel::on_connect_wait);
  io_->socket.start_write_wait(io_->write_wait);
}

void SocketChannel::on_connect_wait(void* self, const std::error_code& ec) {
  static_cast<SocketChannel*>(self)->on_connect_ready(ec);
}

void SocketChannel::on_connect_ready(const std::error_code& ec) {
  if (ec || state_.load() != kConnecting) return;
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  finish_connect(std::error_code(err, std::system_category()));
}

void SocketChannel::finish_connect(std::error_code error) {
  const std::unique_ptr<ConnectState> state = std::move(connect_);
  if (!state) return;  // already completed (timed out or closed)
  if (state->timeout) state->timeout->cancel();
  ChannelPromise promise = std::move(state->promise);
  if (error) {
    promise.try_set_exception(
        std::make_exception_ptr(IoError(error, "connect to " + state->remote.to_string())));
    unsafe().close(ChannelPromise{});
    return;
  }
  local_.store(query_address(fd_, false));
  remote_.store(query_address(fd_, true));
  state_.store(kActive, std::memory_order_release);
  if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("[id: 0x{}] connected to {}", id().as_short_text(), state->remote.to_string());
  }
  const bool set = promise.try_set_value();
  // A cancelled connect promise closes the channel, as in Netty.
  if (!set && !promise.is_void()) {
    unsafe().close(ChannelPromise{});
    return;
  }
  pipeline().fire_channel_active();
}

void SocketChannel::do_close() {
  const int old = state_.exchange(kClosed, std::memory_order_acq_rel);
  if (old == kClosed) return;
  if (const std::unique_ptr<ConnectState> state = std::move(connect_)) {
    if (state->timeout) state->timeout->cancel();
    if (!state->promise.is_void()) {
      state->promise.try_set_exception(std::make_exception_ptr(ClosedChannelError()));
    }
  }
  draining_ = false;
  if (drain_timeout_) {
    drain_timeout_->cancel();  // a no-op when the deadline itself is closing the channel
    drain_timeout_.reset();
  }
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

void SocketChannel::close_for_shutdown() { unsafe().close(ChannelPromise{}); }

void SocketChannel::do_deregister() {
  untrack();
  io_->socket.close();
  // Channel::Unsafe still fires channel_unregistered after this returns: release the self
  // reference from a later handler.
  if (self_) asio::post(loop_.io_context(), [self = std::move(self_)] {});
}

// --- reading ----------------------------------------------------------------------------------

void SocketChannel::do_begin_read() {
  if (!is_active() || input_shutdown_.load()) return;
  read_pending_ = true;
  arm_read();
}

void SocketChannel::arm_read() {
  if (waiting_read_ || !io_->socket.is_open()) return;
  waiting_read_ = true;
  if (maybe_more_) {
    // Data may be left from the last wake-up and no edge will announce it: read on the next
    // turn of the loop (after other channels' work, as Netty's epoll transport does).
    maybe_more_ = false;
    asio::post(loop_.io_context(), [self = shared_from_this()] { self->on_readable({}); });
    return;
  }
  io_->read_wait.prepare([this] { return shared_from_this(); }, this,
                         &SocketChannel::on_read_ready);
  io_->socket.start_read_wait(io_->read_wait);
}

void SocketChannel::on_read_ready(void* self, const std::error_code& ec) {
  auto* channel = static_cast<SocketChannel*>(self);
  // Once the peer may have closed, every later read goes on to EAGAIN or end of stream.
  if (channel->io_->read_wait.peer_may_have_closed()) channel->peer_closed_seen_ = true;
  channel->on_readable(ec);
}

void SocketChannel::record_read(std::size_t n) noexcept {
  if (n >= read_size_) {
    read_size_ = std::min(read_size_ * 2, kMaxReadSize);
    small_reads_ = 0;
  } else if (n < read_size_ / 2) {
    // Shrink only after two small reads in a row, so one short message does not thrash; and
    // only below half, so that the halved size still has room to spare: messages of exactly
    // the halved size would fill it, and a full buffer costs a read that finds nothing.
    if (++small_reads_ >= 2) {
      read_size_ = std::max(read_size_ / 2, kMinReadSize);
      small_reads_ = 0;
    }
  } else {
    small_reads_ = 0;
  }
}

void SocketChannel::on_readable(const std::error_code& ec) {
  waiting_read_ = false;
  if (ec || !is_active() || input_shutdown_.load()) return;
  if (!read_pending_) {
    maybe_more_ = true;  // woken, but nobody wants to read now: the edge is spent
    return;
  }
  read_pending_ = false;
  ByteBufAllocator& alloc = config().allocator();
  const int max_reads = std::max(1, config().max_messages_per_read());
  int reads = 0;
  bool eof = false;
  bool drained = false;
  std::error_code error;
  // Each buffer is filled until it is full, the socket is empty or the stream ends. A short read
  // proves the socket empty only if the wake-up did not report the peer's FIN: data and a FIN
  // that arrive before one wake-up share one edge, and the read that returns the data does not
  // tell of the end of stream behind it. Then (or when the reactor cannot report it) the buffer
  // is read into again until EAGAIN or end of stream, at no allocation.
  const bool short_read_drains = io_->socket.reports_peer_close() && !peer_closed_seen_;
  while (reads < max_reads) {
    ByteBuf buf = alloc.buffer(read_size_);
    auto span = buf.writable_span();
    const std::size_t want = std::min(span.size(), kMaxReadSize);
    std::size_t got = 0;
    while (got < want) {
      const ssize_t n = detail::direct_read(fd_, span.data() + got, want - got);
      if (n > 0) {
        got += static_cast<std::size_t>(n);
        if (short_read_drains && got < want) {
          drained = true;
          break;
        }
        continue;
      }
      if (n == 0) {
        eof = true;
      } else if (errno == EINTR) {
        continue;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        drained = true;
      } else {
        error = last_error();
      }
      break;
    }
    if (got > 0) {
      buf.set_writer_index(got);
      record_read(got);
      ++reads;
      pipeline().fire_channel_read(Message(std::move(buf)));
    }
    if (eof || drained || error || !is_active()) break;
    // A handler turned auto_read off (back-pressure): no more reads in this wake-up either,
    // unless it asked for one with read().
    if (!read_pending_ && !config().auto_read()) break;
  }
  // Before read_complete: with auto_read it asks for the next read at once.
  maybe_more_ = !drained && !eof && !error;
  // The connection is gone both ways (a reset): what the handlers flush from here on (what they
  // wrote while reading, a TLS close_notify, a last response) fails with this error, unsent.
  if (error) read_failure_ = std::make_exception_ptr(IoError(error, "read"));
  if (reads > 0) pipeline().fire_channel_read_complete();
  if (error) {
    pipeline().fire_exception_caught(read_failure_);
    unsafe().close(ChannelPromise{});
    return;
  }
  if (eof) {
    on_eof();
    return;
  }
  // Woken without data (or nobody asked again yet): keep waiting if a read is still wanted.
  if (reads == 0 && is_active()) {
    read_pending_ = true;
    arm_read();
  }
}

void SocketChannel::on_eof() {
  if (!is_active() || input_shutdown_.load()) return;
  if (!allow_half_closure_.load()) {
    close_when_drained();
    return;
  }
  input_shutdown_.store(true);
  read_pending_ = false;
  ::shutdown(fd_, SHUT_RD);
  pipeline().fire_user_event_triggered(Message(ChannelInputShutdownEvent{}));
  if (!is_active()) return;
  pipeline().fire_user_event_triggered(Message(ChannelInputShutdownReadComplete{}));
  if (output_shutdown_.load() && is_active()) unsafe().close(ChannelPromise{});
}

// Closing at once would fail what is flushed but still waiting for the socket (a slow reader's
// echo). So reading stops, the channel stays active (writes flushed meanwhile, such as an
// asynchronous answer to the last request, are written too) and closes when do_write has
// written everything flushed, when a write fails, or at the deadline, whichever comes first.
// Handlers see nothing new: channel_inactive at the close, as before. ChannelInputShutdownEvent
// is not fired: it promises an output that stays open for as long as the handler wants, which
// is half-closure; here the close is already decided and only deferred.
void SocketChannel::close_when_drained() {
  ChannelOutboundBuffer* out = unsafe().outbound_buffer();
  const auto timeout = config().eof_drain_timeout();
  if (out == nullptr || out->is_empty() || timeout.count() <= 0) {
    unsafe().close(ChannelPromise{});
    return;
  }
  input_shutdown_.store(true);  // no read is armed again (a pending wait completes idle)
  read_pending_ = false;
  maybe_more_ = false;
  draining_ = true;
  std::weak_ptr<SocketChannel> weak = shared_from_this();
  ScheduledFuture<void> deadline = loop_.schedule(timeout, [weak] {
    auto self = weak.lock();
    if (!self || !self->draining_ || !self->is_active()) return;
    spdlog::debug("[id: 0x{}] closing: the flushed writes did not drain within {} ms of EOF",
                  self->id().as_short_text(), self->config().eof_drain_timeout().count());
    self->unsafe().close(ChannelPromise{});
  });
  eof_drain_deadline_.store(deadline.deadline_nanos(), std::memory_order_release);
  drain_timeout_ = std::move(deadline);
  spdlog::debug("[id: 0x{}] EOF: writing {} flushed bytes before closing", id().as_short_text(),
                out->total_pending_write_bytes());
  // Flushed writes normally wait for writability already; if not, this writes them (and may
  // finish the drain at once).
  unsafe().write_flushed();
}

// --- writing ----------------------------------------------------------------------------------

Message SocketChannel::filter_outbound_message(Message&& msg) {
  if (output_shutdown_.load()) throw ClosedChannelError("output is shut down");
  if (msg.is<ByteBuf>() || msg.is<CompositeByteBuf>() || msg.is<FileRegion>()) {
    return std::move(msg);
  }
  throw InvalidArgumentError(
      std::string("a SocketChannel writes ByteBuf, CompositeByteBuf or FileRegion, not ") +
      std::string(msg.type_name()));
}

void SocketChannel::arm_write() {
  if (waiting_write_ || !io_->socket.is_open()) return;
  waiting_write_ = true;
  io_->write_wait.prepare([this] { return shared_from_this(); }, this,
                          &SocketChannel::on_write_ready);
  io_->socket.start_write_wait(io_->write_wait);
}

void SocketChannel::on_write_ready(void* self, const std::error_code& ec) {
  auto* ch = static_cast<SocketChannel*>(self);
  ch->waiting_write_ = false;
  if (ec || !ch->is_active()) return;
  ch->unsafe().write_flushed();
}

void SocketChannel::do_write(ChannelOutboundBuffer& out) {
  if (read_failure_) {
    // Reported once, by exception_caught; the close follows it.
    out.fail_flushed(read_failure_, true);
    return;
  }
  if (!draining_) {
    write_flushed_messages(out);
    return;
  }
  // The drain ends with a write error (EPIPE, ECONNRESET: the peer closed fully).
  // Channel::Unsafe fails the flushed writes with it and, with auto_close, closes; without
  // auto_close the close that the FIN decided still comes, after Unsafe is done.
  auto close_later = [this] {
    if (config().auto_close()) return;
    asio::post(loop_.io_context(),
               [self = shared_from_this()] { self->unsafe().close(ChannelPromise{}); });
  };
  try {
    write_flushed_messages(out);
  } catch (...) {
    close_later();
    throw;
  }
  if (unsafe().has_write_error()) {
    close_later();
    return;
  }
  if (out.is_empty() && is_active()) {
    spdlog::debug("[id: 0x{}] flushed writes drained after EOF: closing", id().as_short_text());
    unsafe().close(ChannelPromise{});  // Unsafe keeps `out` alive until the flush returns
  }
}

void SocketChannel::write_flushed_messages(ChannelOutboundBuffer& out) {
  if (waiting_write_ || !io_->socket.is_open()) return;  // the writability wait continues
  if (output_shutdown_.load()) {
    out.fail_flushed(std::make_exception_ptr(ClosedChannelError("output is shut down")), true);
    return;
  }
  int sendfile_calls = 0;
  for (;;) {
    Message* current = out.current();
    if (current == nullptr) return;
    if (FileRegion* region = current->try_get<FileRegion>()) {
      if (sendfile_calls == kSendfileCallsPerTurn) {
        if (!write_continuation_posted_) {
          write_continuation_posted_ = true;
          asio::post(loop_.io_context(), [self = shared_from_this()] {
            self->write_continuation_posted_ = false;
            if (self->is_active()) self->unsafe().write_flushed();
          });
        }
        return;
      }
      ++sendfile_calls;
      if (!send_file_region(out, *region)) return;
      continue;
    }
    // One flushed ByteBuf (request/response traffic): sent from its bytes directly, without
    // gathering iovecs or walking the queue for what was written.
    if (out.size() == 1) {
      if (ByteBuf* buf = out.current()->try_get<ByteBuf>(); buf != nullptr && buf->is_readable()) {
        const auto span = buf->readable_span();
        const ssize_t r = detail::direct_send(fd_, span.data(), span.size(), MSG_NOSIGNAL);
        if (r >= 0) {
          if (static_cast<std::size_t>(r) == span.size()) {
            out.remove();
            if (out.is_empty()) return;
            continue;
          }
          buf->skip_bytes(static_cast<std::size_t>(r));
          arm_write();
          return;
        }
        if (send_failed()) continue;
        return;
      }
    }
    struct iovec iov[kMaxIovecs];
    std::size_t bytes = 0;
    const std::size_t n =
        out.to_iovecs(iov, static_cast<std::size_t>(std::numeric_limits<ssize_t>::max()), &bytes);
    if (n == 0) {
      if (out.is_empty()) return;
      out.remove();  // empty buffers
      continue;
    }
    // One buffer (request/response traffic) goes with send(): sendmsg would also copy and check
    // a msghdr and an iovec array from user space.
    ssize_t r;
    if (n == 1) {
      r = detail::direct_send(fd_, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL);
    } else {
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = n;
      r = detail::direct_sendmsg(fd_, &msg, MSG_NOSIGNAL);
    }
    if (r >= 0) {
      out.remove_bytes(static_cast<std::size_t>(r));
      if (static_cast<std::size_t>(r) < bytes) {
        arm_write();
        return;
      }
      continue;
    }
    if (send_failed()) continue;
    return;
  }
}

bool SocketChannel::send_file_region(ChannelOutboundBuffer& out, FileRegion& region) {
  if (region.is_done()) {
    out.remove();
    return true;
  }
  block_sigpipe_on_this_thread();
  off_t offset = static_cast<off_t>(region.transfer_position());
  const auto want = static_cast<std::size_t>(std::min(region.remaining(), kMaxSendfileBytes));
  const ssize_t r = ::sendfile(fd_, region.fd(), &offset, want);
  if (r > 0) {
    const auto n = static_cast<std::size_t>(r);
    region.add_transferred(n);
    if (region.is_done()) {
      out.remove();
    } else {
      // May fire writability (the region's bytes no longer count): the loop looks at the
      // buffer again afterwards, in case a handler closed the channel meanwhile.
      out.progress(n);
    }
    return true;
  }
  if (r == 0) {
    // The file ended before the region: it was truncated (or the region was wrong). Retrying
    // would spin; what was sent of the region cannot be taken back, so the stream is broken.
    auto error = std::make_exception_ptr(
        IoError(std::make_error_code(std::errc::io_error),
                "sendfile: the file ended at offset " + std::to_string(region.transfer_position()) +
                    ", before the end of the region (" + std::to_string(region.remaining()) +
                    " of " + std::to_string(region.count()) + " bytes not sent)"));
    pipeline().fire_exception_caught(error);
    std::rethrow_exception(error);
  }
  if (errno == EPIPE) consume_sigpipe();
  return send_failed();
}

bool SocketChannel::send_failed() {
  if (errno == EINTR) return true;
  if (errno == EAGAIN || errno == EWOULDBLOCK) {
    arm_write();
    return false;
  }
  auto error = std::make_exception_ptr(IoError(last_error(), "write"));
  pipeline().fire_exception_caught(error);
  // Channel::Unsafe fails the flushed writes with it and closes the channel once do_write
  // returns: left with it rather than thrown (a reset peer costs no unwinding).
  unsafe().set_write_error(std::move(error));
  return false;
}

// --- half-close -------------------------------------------------------------------------------

void SocketChannel::do_shutdown_output() {
  if (!is_active()) throw ClosedChannelError();
  if (output_shutdown_.exchange(true)) return;
  if (::shutdown(fd_, SHUT_WR) != 0) throw IoError(last_error(), "shutdown_output");
  if (auto* out = unsafe().outbound_buffer()) {
    out->fail_flushed(std::make_exception_ptr(ClosedChannelError("output is shut down")), true);
  }
  pipeline().fire_user_event_triggered(Message(ChannelOutputShutdownEvent{}));
  if (input_shutdown_.load() && is_active()) unsafe().close(ChannelPromise{});
}

}  // namespace trellis
