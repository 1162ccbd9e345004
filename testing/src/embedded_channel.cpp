// The embedded test channel (see embedded_channel.hpp).
#include <trellis/testing/embedded_channel.hpp>

#include <trellis/pipeline/channel_events.hpp>
#include <trellis/pipeline/file_region.hpp>

#include <spdlog/spdlog.h>

namespace trellis {

EmbeddedChannel::~EmbeddedChannel() {
  try {
    if (is_open()) close();
    run_pending_tasks();
  } catch (...) {
    // A destructor reports nothing: the test had its chance with finish().
  }
  inbound_messages_.clear();
  outbound_messages_.clear();
  pending_inbound_.clear();
  user_events_.clear();
}

void EmbeddedChannel::register_channel() {
  unsafe().register_channel();
  run_pending_tasks();
}

void EmbeddedChannel::ensure_open() {
  if (!is_open()) {
    record(std::make_exception_ptr(ClosedChannelError()));
    check_exception();
  }
}

void EmbeddedChannel::ensure_input_open() {
  ensure_open();
  if (input_shutdown_) {
    record(std::make_exception_ptr(ClosedChannelError("input is shut down")));
    check_exception();
  }
}

void EmbeddedChannel::write_one_inbound(Message&& msg) {
  if (config().auto_read()) {
    delivered_ = true;
    pipeline().fire_channel_read(std::move(msg));
  } else {
    pending_inbound_.push_back(std::move(msg));
  }
}

bool EmbeddedChannel::flush_inbound() {
  // A batch delivered while auto_read was on ends with its read_complete even if a handler
  // turned auto_read off meanwhile (as a socket's read does).
  if (config().auto_read() || delivered_) {
    delivered_ = false;
    pipeline().fire_channel_read_complete();
  } else if (read_pending_) {
    do_begin_read();
  }
  run_pending_tasks();
  check_exception();
  return !inbound_messages_.empty();
}

bool EmbeddedChannel::flush_outbound() {
  flush();
  run_pending_tasks();
  check_exception();
  return !outbound_messages_.empty();
}

void EmbeddedChannel::set_outbound_byte_budget(std::optional<std::size_t> budget) {
  budget_ = budget;
  unsafe().write_flushed();
}

void EmbeddedChannel::add_outbound_byte_budget(std::size_t n) {
  budget_ = budget_.value_or(0) + n;
  unsafe().write_flushed();
}

void EmbeddedChannel::set_writable(bool writable) {
  peer_reading_ = writable;
  if (auto* out = unsafe().outbound_buffer()) out->set_user_defined_writability(writable);
  if (writable) unsafe().write_flushed();
}

Future<void> EmbeddedChannel::shutdown_output() {
  Future<void> done = Channel::shutdown_output();
  run_pending_tasks();
  return done;
}

void EmbeddedChannel::do_shutdown_output() {
  if (!is_active()) throw ClosedChannelError();
  if (output_shutdown_) return;
  output_shutdown_ = true;
  if (auto* out = unsafe().outbound_buffer()) {
    out->fail_flushed(std::make_exception_ptr(ClosedChannelError("output is shut down")), true);
  }
  pipeline().fire_user_event_triggered(Message(ChannelOutputShutdownEvent{}));
  if (input_shutdown_ && is_active()) Channel::close();
}

void EmbeddedChannel::shutdown_input() {
  if (!is_active() || input_shutdown_) return;
  if (!allow_half_closure_) {
    ChannelOutboundBuffer* out = unsafe().outbound_buffer();
    const auto timeout = config().eof_drain_timeout();
    if (out == nullptr || out->is_empty() || timeout.count() <= 0) {
      // As a socket at end of stream: closed by the transport, not through the pipeline.
      unsafe().close(ChannelPromise{});
      run_pending_tasks();
      embedded_loop_.cancel_scheduled_tasks();
      check_exception();
      return;
    }
    // SocketChannel's drain (see close_when_drained there), on this channel's clock.
    input_shutdown_ = true;
    read_pending_ = false;
    draining_ = true;
    drain_timeout_ = embedded_loop_.schedule(timeout, [this] {
      if (draining_ && is_active()) unsafe().close(ChannelPromise{});
    });
    run_pending_tasks();
    check_exception();
    return;
  }
  input_shutdown_ = true;
  read_pending_ = false;
  pipeline().fire_user_event_triggered(Message(ChannelInputShutdownEvent{}));
  if (is_active())
    pipeline().fire_user_event_triggered(Message(ChannelInputShutdownReadComplete{}));
  if (output_shutdown_ && is_active()) Channel::close();
  run_pending_tasks();
  check_exception();
}

Message EmbeddedChannel::filter_outbound_message(Message&& msg) {
  if (output_shutdown_) throw ClosedChannelError("output is shut down");
  return std::move(msg);
}

void EmbeddedChannel::close() {
  Channel::close();
  run_pending_tasks();
  embedded_loop_.cancel_scheduled_tasks();
}

void EmbeddedChannel::close(ChannelPromise promise) {
  Channel::close(std::move(promise));
  run_pending_tasks();
  embedded_loop_.cancel_scheduled_tasks();
}

bool EmbeddedChannel::finish() {
  close();
  check_exception();
  return !inbound_messages_.empty() || !outbound_messages_.empty();
}

bool EmbeddedChannel::finish_and_release_all() {
  close();
  const bool any = !inbound_messages_.empty() || !outbound_messages_.empty();
  inbound_messages_.clear();
  outbound_messages_.clear();
  pending_inbound_.clear();
  user_events_.clear();
  check_exception();
  return any;
}

void EmbeddedChannel::run_pending_tasks() {
  try {
    embedded_loop_.run_pending_tasks();
  } catch (...) {
    record(std::current_exception());
  }
  try {
    embedded_loop_.run_scheduled_pending_tasks();
  } catch (...) {
    record(std::current_exception());
  }
}

std::int64_t EmbeddedChannel::run_scheduled_pending_tasks() {
  try {
    return embedded_loop_.run_scheduled_pending_tasks();
  } catch (...) {
    record(std::current_exception());
    return embedded_loop_.next_scheduled_task_nanos();
  }
}

void EmbeddedChannel::check_exception() {
  if (checked_ < exceptions_.size()) {
    auto first = exceptions_[checked_];
    checked_ = exceptions_.size();
    std::rethrow_exception(first);
  }
}

void EmbeddedChannel::throw_wrong_type(const char* what, std::string_view wanted,
                                       std::string_view held) {
  std::string text(what);
  text.append("<").append(wanted).append(">: the next message is a ").append(held);
  throw WrongTypeError(text);
}

// --- transport hooks -----------------------------------------------------------------------------

void EmbeddedChannel::do_register() { state_ = State::kActive; }
void EmbeddedChannel::do_bind(const SocketAddress& local) { local_ = local; }
void EmbeddedChannel::do_connect(const SocketAddress& remote, const std::optional<SocketAddress>&,
                                 ChannelPromise promise) {
  remote_ = remote;
  promise.try_set_value();
}
void EmbeddedChannel::do_close() {
  state_ = State::kClosed;
  draining_ = false;
  if (drain_timeout_) {
    drain_timeout_->cancel();
    drain_timeout_.reset();
  }
}
void EmbeddedChannel::do_deregister() { embedded_loop_.cancel_scheduled_tasks(); }

void EmbeddedChannel::do_begin_read() {
  read_pending_ = true;
  if (reading_) return;  // the loop below picks the new request up
  reading_ = true;
  while (read_pending_ && !pending_inbound_.empty() && is_active()) {
    read_pending_ = false;
    // A read under auto_read stops once a handler turned auto_read off, as a SocketChannel stops
    // a wake-up's reads (back-pressure takes effect at the message that asked for it); a read()
    // made with auto_read off delivers its whole batch.
    const bool auto_read = config().auto_read();
    for (int n = config().max_messages_per_read(); n > 0 && !pending_inbound_.empty(); --n) {
      if (auto_read && !config().auto_read()) break;
      pipeline().fire_channel_read(pending_inbound_.take_front());
    }
    pipeline().fire_channel_read_complete();
  }
  reading_ = false;
}

void EmbeddedChannel::do_write(ChannelOutboundBuffer& out) {
  while (peer_reading_) {
    Message* msg = out.current();
    if (msg == nullptr) break;
    if (budget_) {
      if (auto* buf = msg->try_get<ByteBuf>()) {
        const std::size_t readable = buf->readable_bytes();
        if (readable > *budget_) {
          // A partial write: the peer takes what fits, the rest stays queued.
          if (*budget_ > 0) {
            outbound_messages_.push_back(buf->read_slice(*budget_));
            budget_ = 0;
          }
          break;
        }
        *budget_ -= readable;
      } else if (auto* region = msg->try_get<FileRegion>()) {
        // As sendfile would: the part that fits leaves as a region of its own (sharing the
        // descriptor), the rest stays queued and stops counting what was sent.
        const std::uint64_t remaining = region->remaining();
        if (remaining > *budget_) {
          if (*budget_ > 0) {
            outbound_messages_.push_back(
                Message(region->share(region->transfer_position(), *budget_)));
            region->add_transferred(*budget_);
            out.progress(*budget_);
            budget_ = 0;
          }
          break;
        }
        *budget_ -= static_cast<std::size_t>(remaining);
      }
    }
    outbound_messages_.push_back(std::move(*msg));
    out.remove();
  }
  if (draining_ && out.is_empty() && is_active()) unsafe().close(ChannelPromise{});
}

// --- tail ----------------------------------------------------------------------------------------

void EmbeddedChannel::on_unhandled_inbound_message(Message&& msg) {
  inbound_messages_.push_back(std::move(msg));
}
void EmbeddedChannel::on_unhandled_inbound_exception(std::exception_ptr error) {
  record(std::move(error));
}
void EmbeddedChannel::on_unhandled_user_event(Message&& event) {
  user_events_.push_back(std::move(event));
}

}  // namespace trellis
