// Channel and Channel::Unsafe: what every transport shares (see channel.hpp).
#include <trellis/pipeline/channel.hpp>

#include <atomic>

#include <spdlog/spdlog.h>

#include "pipeline_internal.hpp"

namespace trellis {

namespace detail {
std::uint32_t next_attribute_key_id() noexcept {
  static std::atomic<std::uint32_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace detail

Channel::Channel(EventExecutor& loop, Channel* parent, ChannelId id)
    : id_(id),
      parent_(parent),
      loop_(&loop),
      config_(*this),
      unsafe_(*this),
      pipeline_(*this),
      close_promise_(&loop) {
  unsafe_.outbound_buffer_ = std::make_unique<ChannelOutboundBuffer>(*this);
}

Channel::~Channel() = default;

std::shared_ptr<Channel> Channel::shared_from_this() {
  auto owner = shared_owner();
  if (!owner) {
    throw IllegalStateError("channel [id: 0x" + id().as_short_text() +
                            "] is not owned by a std::shared_ptr");
  }
  return owner;
}

bool Channel::is_writable() const noexcept {
  return unsafe_.outbound_buffer_ && unsafe_.outbound_buffer_->is_writable();
}
std::size_t Channel::bytes_before_unwritable() const noexcept {
  return unsafe_.outbound_buffer_ ? unsafe_.outbound_buffer_->bytes_before_unwritable() : 0;
}
std::size_t Channel::bytes_before_writable() const noexcept {
  return unsafe_.outbound_buffer_ ? unsafe_.outbound_buffer_->bytes_before_writable() : 0;
}

void Channel::bind(const SocketAddress& local, ChannelPromise promise) {
  pipeline_.bind(local, std::move(promise));
}
void Channel::connect(const SocketAddress& remote, ChannelPromise promise) {
  pipeline_.connect(remote, std::move(promise));
}
void Channel::disconnect(ChannelPromise promise) { pipeline_.disconnect(std::move(promise)); }
void Channel::close(ChannelPromise promise) { pipeline_.close(std::move(promise)); }
void Channel::read() { pipeline_.read(); }
void Channel::write(Message&& msg, ChannelPromise promise) {
  pipeline_.write(std::move(msg), std::move(promise));
}
void Channel::flush() { pipeline_.flush(); }
void Channel::write_and_flush(Message&& msg, ChannelPromise promise) {
  pipeline_.write_and_flush(std::move(msg), std::move(promise));
}

Future<void> Channel::shutdown_output() {
  ChannelPromise promise = new_promise();
  Future<void> done = promise.future();
  pipeline_.shutdown_output(std::move(promise));
  return done;
}

void Channel::do_shutdown_output() {
  throw IllegalStateError("this channel cannot shut its output down");
}

void Channel::on_unhandled_inbound_message(Message&& msg) {
  spdlog::debug(
      "[id: 0x{}] discarded inbound message of type {} that reached the tail of the pipeline; "
      "check the pipeline configuration",
      id_.as_short_text(), msg.type_name());
}

void Channel::on_unhandled_inbound_exception(std::exception_ptr error) {
  spdlog::warn(
      "[id: 0x{}] an exception reached the tail of the pipeline (no handler dealt with it in "
      "exception_caught): {}",
      id_.as_short_text(), detail::describe_exception(error));
}

void Channel::on_unhandled_user_event(Message&& event) {
  spdlog::debug("[id: 0x{}] user event of type {} reached the tail of the pipeline",
                id_.as_short_text(), event.type_name());
}

// --- Unsafe --------------------------------------------------------------------------------------

template <class Fn>
void Channel::Unsafe::invoke_later(Fn&& fn) {
  // execute() takes the task by value and destroys it when it refuses it (the loop is shut
  // down): keep a copy to run here then, or a close would never deregister the channel.
  std::decay_t<Fn> work(std::forward<Fn>(fn));
  try {
    channel_.loop_->execute(UniqueFunction<void()>(work));
  } catch (const RejectedExecutionError&) {
    work();
  }
}

void Channel::Unsafe::fail(ChannelPromise& promise, std::exception_ptr error) {
  if (promise.is_void()) {
    channel_.pipeline_.fire_exception_caught(std::move(error));
  } else {
    promise.try_set_exception(std::move(error));
  }
}

void Channel::Unsafe::register_channel() {
  if (channel_.registered_) throw IllegalStateError("channel is already registered");
  if (!channel_.loop_->in_event_loop()) {
    throw IllegalStateError("register_channel must run on the channel's event loop");
  }
  channel_.do_register();
  channel_.registered_ = true;
  channel_.pipeline_.fire_channel_registered();
  if (channel_.is_active()) channel_.pipeline_.fire_channel_active();
}

void Channel::Unsafe::bind(const SocketAddress& local, ChannelPromise promise) {
  if (!channel_.is_open()) {
    fail(promise, std::make_exception_ptr(ClosedChannelError()));
    return;
  }
  const bool was_active = channel_.is_active();
  try {
    channel_.do_bind(local);
  } catch (...) {
    fail(promise, std::current_exception());
    return;
  }
  if (!was_active && channel_.is_active()) {
    invoke_later([this] { channel_.pipeline_.fire_channel_active(); });
  }
  promise.try_set_value();
}

void Channel::Unsafe::connect(const SocketAddress& remote,
                              const std::optional<SocketAddress>& local, ChannelPromise promise) {
  if (!channel_.is_open()) {
    fail(promise, std::make_exception_ptr(ClosedChannelError()));
    return;
  }
  ChannelPromise keep = promise;
  try {
    channel_.do_connect(remote, local, std::move(promise));
  } catch (...) {
    fail(keep, std::current_exception());
  }
}

void Channel::Unsafe::disconnect(ChannelPromise promise) {
  if (!channel_.supports_disconnect()) {
    close(std::move(promise));
    return;
  }
  const bool was_active = channel_.is_active();
  try {
    channel_.do_disconnect();
  } catch (...) {
    fail(promise, std::current_exception());
    return;
  }
  if (was_active && !channel_.is_active()) {
    invoke_later([this] { channel_.pipeline_.fire_channel_inactive(); });
  }
  promise.try_set_value();
}

void Channel::Unsafe::close(ChannelPromise promise) {
  if (close_initiated_) {
    if (channel_.close_promise_.is_done()) {
      promise.try_set_value();
    } else if (!promise.is_void()) {
      channel_.close_future().add_listener(
          [promise](const Future<void>&) mutable { promise.try_set_value(); });
    }
    return;
  }
  close_initiated_ = true;
  const bool was_active = channel_.is_active();
  // From here on writes fail at once; what was queued fails below, after the close completed.
  std::unique_ptr<ChannelOutboundBuffer> buffer = std::move(outbound_buffer_);
  std::exception_ptr close_error;
  try {
    channel_.do_close();
  } catch (...) {
    close_error = std::current_exception();
  }
  channel_.close_promise_.try_set_value();
  if (close_error) {
    fail(promise, close_error);
  } else {
    promise.try_set_value();
  }
  if (buffer) buffer->close(std::make_exception_ptr(ClosedChannelError()));
  if (in_flush_) {
    retired_outbound_buffer_ = std::move(buffer);
  } else {
    buffer.reset();
  }
  invoke_later([this, was_active] {
    if (was_active) channel_.pipeline_.fire_channel_inactive();
    deregister();
  });
}

void Channel::Unsafe::deregister() {
  if (!channel_.registered_) return;
  try {
    channel_.do_deregister();
  } catch (...) {
    spdlog::warn("[id: 0x{}] deregistration failed: {}", channel_.id_.as_short_text(),
                 detail::describe_exception(std::current_exception()));
  }
  channel_.registered_ = false;
  channel_.pipeline_.fire_channel_unregistered();
}

void Channel::Unsafe::begin_read() {
  if (!channel_.is_active()) return;
  try {
    channel_.do_begin_read();
  } catch (...) {
    auto error = std::current_exception();
    invoke_later([this, error] { channel_.pipeline_.fire_exception_caught(error); });
    close(ChannelPromise{});
  }
}

void Channel::Unsafe::write(Message&& msg, ChannelPromise promise) {
  if (!outbound_buffer_) {
    fail(promise, std::make_exception_ptr(ClosedChannelError()));
    return;
  }
  Message filtered;
  std::size_t size = 0;
  try {
    filtered = channel_.filter_outbound_message(std::move(msg));
    size = ChannelOutboundBuffer::message_size(filtered);
  } catch (...) {
    fail(promise, std::current_exception());
    return;
  }
  outbound_buffer_->add_message(std::move(filtered), size, std::move(promise));
}

void Channel::Unsafe::flush() {
  if (!outbound_buffer_) return;
  outbound_buffer_->add_flush();
  write_flushed();
}

void Channel::Unsafe::shutdown_output(ChannelPromise promise) {
  try {
    channel_.do_shutdown_output();
  } catch (...) {
    fail(promise, std::current_exception());
    return;
  }
  promise.try_set_value();
}

void Channel::Unsafe::write_flushed() {
  if (in_flush_ || !outbound_buffer_ || outbound_buffer_->is_empty()) return;
  // Completing a promise runs listeners, which may close the channel: in_flush_ keeps the
  // buffer alive (see retired_outbound_buffer_) until the work on it is over.
  in_flush_ = true;
  std::exception_ptr error;
  if (!channel_.is_active()) {
    outbound_buffer_->fail_flushed(
        std::make_exception_ptr(channel_.is_open()
                                    ? ClosedChannelError("channel is not connected yet")
                                    : ClosedChannelError()),
        true);
  } else {
    try {
      channel_.do_write(*outbound_buffer_);
    } catch (...) {
      error = std::current_exception();
    }
    if (write_error_) {
      if (!error) error = write_error_;
      write_error_ = nullptr;
    }
    if (error && outbound_buffer_) outbound_buffer_->fail_flushed(error, true);
  }
  in_flush_ = false;
  retired_outbound_buffer_.reset();
  if (error && channel_.config_.auto_close()) close(ChannelPromise{});
}

}  // namespace trellis
