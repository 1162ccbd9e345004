// ReactorDescriptor: a socket registered directly with its EventLoop's Asio reactor (epoll, edge-
// triggered), for readiness waits that cost no system call. Asio's async_wait re-arms interest
// with epoll_ctl on every wait; a socket channel that reads by itself after each wake-up needs
// only "tell me at the next edge", which the reactor can do for free when the last wake-up
// drained the socket. One ReadinessWait per direction lives in the channel and is reused.
//
// The descriptor is also registered for EPOLLRDHUP, and a wait keeps the epoll events of the
// wake-up that completed it, so a reader can tell a drained socket from one whose FIN arrived
// together with the last bytes (one edge for both) without a probing read. That needs three
// private members of Asio's epoll_reactor (its epoll descriptor, a descriptor's registered
// events, the ready events of a wake-up), reached in reactor_descriptor.cpp only; the Asio of
// the Debian package the product pins has them, and the code checks their types at compile
// time.
#pragma once

#include <cstdint>
#include <memory>
#include <system_error>

// First: it completes the scheduler that the reactor headers need.
#include <asio/io_context.hpp>

#include <asio/detail/reactor.hpp>
#include <asio/detail/reactor_op.hpp>

namespace trellis::detail {

// A reusable readiness wait: at most one in flight. While pending it holds keep_alive (the
// channel), so the channel outlives a wait that the reactor completes or aborts.
class ReadinessWait final : public asio::detail::reactor_op {
 public:
  using Callback = void (*)(void* target, const std::error_code& ec);

  ReadinessWait() : reactor_op(asio::error_code(), &do_perform, &do_complete) {}
  ReadinessWait(const ReadinessWait&) = delete;
  ReadinessWait& operator=(const ReadinessWait&) = delete;

  // Prepares the next wait: callback(target, ec) runs on the loop when it completes (ec is
  // operation_aborted when the descriptor closes first). owner() gives what the pending wait
  // keeps alive (the channel); it is called only when the wait holds nothing: a wait prepared
  // again from its own completion callback (a reader re-arming after a read) keeps the reference
  // it completed with, without touching the reference count.
  template <class Owner>
  void prepare(Owner&& owner, void* target, Callback callback) {
    ec_ = asio::error_code();
    target_ = target;
    callback_ = callback;
    if (completing_) {
      rearmed_ = true;
    } else {
      keep_alive_ = owner();
    }
  }

  // After completion: the peer may have shut down its output (EPOLLRDHUP, EPOLLHUP or EPOLLERR
  // in the events of the wake-up that completed the wait, or of the latest one when the reactor
  // completed it at once). When false, a short read means the socket is empty.
  bool peer_may_have_closed() const noexcept { return peer_closed_; }

 private:
  friend class ReactorDescriptor;

  // The reactor performs a wait when the descriptor is (or may be) ready: it is over at once,
  // and "exhausted" tells the reactor not to try the next wait speculatively until a new edge.
  // It also notes the wake-up's events.
  static status do_perform(reactor_op* base);
  static void do_complete(void* owner, asio::detail::operation* base, const asio::error_code&,
                          std::size_t);

  asio::detail::reactor::per_descriptor_data state_ = nullptr;
  bool peer_closed_ = false;
  bool completing_ = false;  // the callback runs: a new prepare reuses the reference
  bool rearmed_ = false;     // prepared again while completing_
  std::shared_ptr<void> keep_alive_;
  void* target_ = nullptr;
  Callback callback_ = nullptr;
};

class ReactorDescriptor {
 public:
  explicit ReactorDescriptor(asio::io_context& context);
  ~ReactorDescriptor();
  ReactorDescriptor(const ReactorDescriptor&) = delete;
  ReactorDescriptor& operator=(const ReactorDescriptor&) = delete;

  // Takes ownership of fd and registers it (readable, peer-closed and error edges; writable on
  // demand): one epoll_ctl. Throws std::system_error if the reactor refuses it (fd is then
  // closed). sole_descriptor: fd is its socket's only descriptor (made or accepted by the caller,
  // with close-on-exec), so closing it takes it out of the epoll set without an epoll_ctl.
  void assign(int fd, bool sole_descriptor = false);
  bool is_open() const noexcept { return fd_ >= 0; }
  // True when waits report the peer's FIN (EPOLLRDHUP could be added); else readers must read
  // until EAGAIN to see an end of stream that came with the last bytes.
  bool reports_peer_close() const noexcept { return reports_peer_close_; }
  int native_handle() const noexcept { return fd_; }

  // Completes at the next readable edge, or at once if an edge came since the last wait
  // completed: no system call when the socket was drained. The caller must only wait again
  // after reading until EAGAIN or end of stream; otherwise data may sit unseen. (A short read is
  // not enough: bytes and a FIN that arrive before one wake-up share one edge.)
  void start_read_wait(ReadinessWait& wait);
  // Completes when the socket is writable (adds EPOLLOUT interest: one epoll_ctl).
  void start_write_wait(ReadinessWait& wait);

  // Aborts pending waits (they complete with operation_aborted) and closes the descriptor.
  void close() noexcept;

 private:
  asio::detail::reactor& reactor_;
  asio::detail::reactor::per_descriptor_data data_ = nullptr;
  int fd_ = -1;
  bool reports_peer_close_ = false;
  bool sole_descriptor_ = false;
};

}  // namespace trellis::detail
