// ReactorDescriptor and ReadinessWait (see detail/reactor_descriptor.hpp).
#include <trellis/transport/detail/reactor_descriptor.hpp>

#include <unistd.h>

#include <asio/post.hpp>

namespace trellis::detail {

void ReadinessWait::do_complete(void* owner, asio::detail::operation* base, const asio::error_code&,
                                std::size_t) {
  auto* wait = static_cast<ReadinessWait*>(base);
  // The wait may be part of the object keep_alive holds: release it only after the callback.
  auto keep_alive = std::move(wait->keep_alive_);
  if (owner == nullptr) return;  // the io_context is being destroyed: just let go
  const std::error_code ec = wait->ec_;
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
}

void ReactorDescriptor::start_read_wait(ReadinessWait& wait) {
  reactor_.start_op(asio::detail::reactor::read_op, fd_, data_, &wait, false, true);
}

void ReactorDescriptor::start_write_wait(ReadinessWait& wait) {
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
