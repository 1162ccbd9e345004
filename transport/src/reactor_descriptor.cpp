// ReactorDescriptor and ReadinessWait (see detail/reactor_descriptor.hpp).
#include <trellis/transport/detail/reactor_descriptor.hpp>

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

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

// What register_descriptor sets up, reached so that assign() can register a socket with
// EPOLLRDHUP in one epoll_ctl (Asio's own registration leaves it out: a second call would add it).
struct AllocateState {
  using type = DescriptorState* (EpollReactor::*)();
  friend type member(AllocateState);
};
template struct Reach<AllocateState, &EpollReactor::allocate_descriptor_state>;

struct StateMutex {
  using type = asio::detail::conditionally_enabled_mutex DescriptorState::*;
  friend type member(StateMutex);
};
template struct Reach<StateMutex, &DescriptorState::mutex_>;

struct StateReactor {
  using type = EpollReactor* DescriptorState::*;
  friend type member(StateReactor);
};
template struct Reach<StateReactor, &DescriptorState::reactor_>;

struct StateDescriptor {
  using type = int DescriptorState::*;
  friend type member(StateDescriptor);
};
template struct Reach<StateDescriptor, &DescriptorState::descriptor_>;

struct StateShutdown {
  using type = bool DescriptorState::*;
  friend type member(StateShutdown);
};
template struct Reach<StateShutdown, &DescriptorState::shutdown_>;

struct TrySpeculative {
  using type = bool (DescriptorState::*)[EpollReactor::max_ops];
  friend type member(TrySpeculative);
};
template struct Reach<TrySpeculative, &DescriptorState::try_speculative_>;

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

void ReactorDescriptor::assign(int fd, bool sole_descriptor) {
  // As epoll_reactor::register_descriptor, with EPOLLRDHUP in the same epoll_ctl: waits then
  // report the peer's FIN with the data before it.
  DescriptorState* state = (reactor_.*member(AllocateState{}))();
  {
    asio::detail::conditionally_enabled_mutex::scoped_lock lock(state->*member(StateMutex{}));
    state->*member(StateReactor{}) = &reactor_;
    state->*member(StateDescriptor{}) = fd;
    state->*member(StateShutdown{}) = false;
    for (bool& speculative : state->*member(TrySpeculative{})) speculative = true;
  }
  // Asio reuses the state of closed descriptors, and with it the ready events of their last
  // wake-up; the first wait completes at once (speculatively) and would report those. A closed
  // connection's EPOLLRDHUP would then make every short read of this one look unproven, costing a
  // read to EAGAIN per wake-up. Nothing has been reported for this descriptor yet: no events.
  // (assign runs on the loop's thread, so no wake-up of this descriptor can be in progress.)
  ready_events(state) = 0;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLPRI | EPOLLET | EPOLLRDHUP;
  ev.data.ptr = state;
  auto& registered = state->*member(RegisteredEvents{});
  registered = ev.events;
  reports_peer_close_ = true;
  if (::epoll_ctl(reactor_.*member(EpollFd{}), EPOLL_CTL_ADD, fd, &ev) != 0) {
    const int error = errno;
    if (error != EPERM) {
      data_ = state;
      reactor_.cleanup_descriptor_data(data_);
      data_ = nullptr;
      ::close(fd);
      throw std::system_error(error, std::system_category(), "register with the reactor");
    }
    // Not pollable (a regular file): operations on it do not block, as Asio allows.
    registered = 0;
    reports_peer_close_ = false;
  }
  data_ = state;
  fd_ = fd;
  sole_descriptor_ = sole_descriptor;
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
  // A descriptor that is its socket's only one leaves the epoll set when it is closed (closing=
  // true, as Asio does for sockets it created); any other is removed explicitly first, since a
  // duplicate elsewhere would keep the registration (and its events) alive.
  reactor_.deregister_descriptor(fd_, data_, sole_descriptor_);
  ::close(fd_);
  fd_ = -1;
  reactor_.cleanup_descriptor_data(data_);
  data_ = nullptr;
}

}  // namespace trellis::detail
