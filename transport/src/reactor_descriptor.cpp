// ReactorDescriptor and ReadinessWait (see detail/reactor_descriptor.hpp).
#include <trellis/transport/detail/reactor_descriptor.hpp>

#include <sys/epoll.h>
#include <unistd.h>

#include <type_traits>

#include <asio/post.hpp>

namespace trellis::detail {

namespace {

// Reaches a private member without naming it in an access-checked context: the address of a
// member is allowed as the argument of an explicit instantiation ([temp.spec.general]/6), and the
// friend function defined there hands it out.
template <class Tag, typename Tag::type kMember>
struct Reach {
  friend typename Tag::type member(Tag) { return kMember; }
};

static_assert(std::is_same_v<asio::detail::reactor, asio::detail::epoll_reactor>,
              "ReactorDescriptor is written for Asio's epoll reactor");
using EpollReactor = asio::detail::epoll_reactor;
using DescriptorState = std::remove_pointer_t<EpollReactor::per_descriptor_data>;

struct EpollFd {
  using type = int EpollReactor::*;
  friend type member(EpollFd);
};
template struct Reach<EpollFd, &EpollReactor::epoll_fd_>;

struct RegisteredEvents {
  using type = std::uint32_t DescriptorState::*;
  friend type member(RegisteredEvents);
};
template struct Reach<RegisteredEvents, &DescriptorState::registered_events_>;

// The ready events of the latest wake-up of a descriptor (epoll_reactor::run stores them in the
// descriptor's scheduler_operation::task_result_ before it performs the descriptor's operations).
struct ReadyEvents {
  using type = unsigned int asio::detail::scheduler_operation::*;
  friend type member(ReadyEvents);
};
template struct Reach<ReadyEvents, &asio::detail::scheduler_operation::task_result_>;

unsigned int& ready_events(DescriptorState* state) noexcept {
  // A C-style cast may convert to an inaccessible base class ([expr.cast]/4).
  auto* op = (asio::detail::scheduler_operation*)state;  // NOLINT(google-readability-casting)
  return op->*member(ReadyEvents{});
}

}  // namespace

ReadinessWait::status ReadinessWait::do_perform(reactor_op* base) {
  auto* wait = static_cast<ReadinessWait*>(base);
  if (wait->state_ != nullptr) {
    wait->peer_closed_ = (ready_events(wait->state_) & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
  }
  return done_and_exhausted;
}

void ReadinessWait::do_complete(void* owner, asio::detail::operation* base, const asio::error_code&,
                                std::size_t) {
  auto* wait = static_cast<ReadinessWait*>(base);
  // The wait may be part of the object keep_alive holds: release it only after the callback.
  auto keep_alive = std::move(wait->keep_alive_);
  if (owner == nullptr) return;  // the io_context is being destroyed: just let go
  const std::error_code ec = wait->ec_;
  wait->completing_ = true;
  wait->rearmed_ = false;
  struct Done {
    ReadinessWait* wait;
    std::shared_ptr<void>& keep_alive;
    ~Done() {
      wait->completing_ = false;
      // Prepared again from the callback: the pending wait keeps the same reference.
      if (wait->rearmed_) wait->keep_alive_ = std::move(keep_alive);
    }
  } done{wait, keep_alive};
  wait->callback_(wait->target_, ec);
}

ReactorDescriptor::ReactorDescriptor(asio::io_context& context)
    : reactor_(asio::use_service<asio::detail::reactor>(context)) {
  reactor_.init_task();  // as Asio's own socket services do: the scheduler runs the reactor
}

ReactorDescriptor::~ReactorDescriptor() { close(); }

void ReactorDescriptor::assign(int fd) {
  if (const int error = reactor_.register_descriptor(fd, data_)) {
    reactor_.cleanup_descriptor_data(data_);
    data_ = nullptr;
    ::close(fd);
    throw std::system_error(error, std::system_category(), "register with the reactor");
  }
  fd_ = fd;
  // Asio reuses the state of closed descriptors, and with it the ready events of their last
  // wake-up; the first wait completes at once (speculatively) and would report those. A closed
  // connection's EPOLLRDHUP would then make every short read of this one look unproven, costing a
  // read to EAGAIN per wake-up. Nothing has been reported for this descriptor yet: no events.
  // (assign runs on the loop's thread, so no wake-up of this descriptor can be in progress.)
  ready_events(data_) = 0;
  // Add EPOLLRDHUP to what Asio registered (and to what it remembers, so that adding EPOLLOUT
  // later keeps it). Nothing else knows the descriptor yet: no lock is needed.
  auto& registered = data_->*member(RegisteredEvents{});
  reports_peer_close_ = false;
  if (registered != 0) {
    epoll_event ev{};
    ev.events = registered | EPOLLRDHUP;
    ev.data.ptr = data_;
    if (::epoll_ctl(reactor_.*member(EpollFd{}), EPOLL_CTL_MOD, fd, &ev) == 0) {
      registered = ev.events;
      reports_peer_close_ = true;
    }
  }
}

void ReactorDescriptor::start_read_wait(ReadinessWait& wait) {
  wait.state_ = data_;
  reactor_.start_op(asio::detail::reactor::read_op, fd_, data_, &wait, false, true);
}

void ReactorDescriptor::start_write_wait(ReadinessWait& wait) {
  wait.state_ = data_;
  reactor_.start_op(asio::detail::reactor::write_op, fd_, data_, &wait, false, false);
}

void ReactorDescriptor::close() noexcept {
  if (fd_ < 0) return;
  // closing=false: remove it from the epoll set explicitly (as Asio does for descriptors it did
  // not create), then close.
  reactor_.deregister_descriptor(fd_, data_, false);
  ::close(fd_);
  fd_ = -1;
  reactor_.cleanup_descriptor_data(data_);
  data_ = nullptr;
}

}  // namespace trellis::detail
