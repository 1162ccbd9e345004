// The handler behind AsyncServerChannel (see detail/async_accept_handler.hpp).
#include <trellis/transport/detail/async_accept_handler.hpp>

#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/transport/socket_channel.hpp>

namespace trellis::detail {

AsyncAcceptHandler::Arrival::~Arrival() {
  // Not handed over (failed, refused by the server loop, or nobody accepts any more).
  if (child) {
    try {
      child->close();
    } catch (...) {
      // The child's loop is gone: the channel was closed when it stopped.
    }
  }
}

AsyncAcceptHandler::AsyncAcceptHandler(ChannelOptions child_options,
                                       std::shared_ptr<ChannelHandler> child_handler,
                                       AsyncChildWrapper wrap, AsyncServerChannelOptions options)
    : child_options_(std::make_shared<const ChannelOptions>(std::move(child_options))),
      child_handler_(std::move(child_handler)),
      wrap_(std::move(wrap)),
      options_(options) {
  if (options.low_watermark == 0 || options.low_watermark > options.high_watermark) {
    throw InvalidArgumentError("AsyncServerChannelOptions: need 0 < low_watermark (" +
                               std::to_string(options.low_watermark) + ") <= high_watermark (" +
                               std::to_string(options.high_watermark) + ")");
  }
}

AsyncAcceptHandler::~AsyncAcceptHandler() {
  for (auto& r : ready_) {
    try {
      r.child->close();
    } catch (...) {
    }
  }
}

void AsyncAcceptHandler::handler_added(ChannelHandlerContext& ctx) { server_ = &ctx.channel(); }

void AsyncAcceptHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  auto* child_ptr = msg.try_get<std::shared_ptr<SocketChannel>>();
  if (child_ptr == nullptr) {
    ctx.fire_channel_read(std::move(msg));
    return;
  }
  std::shared_ptr<SocketChannel> child = std::move(*child_ptr);
  if (abandoned_) return;  // never registered: dropping it closes the socket
  const std::uint64_t seq = next_seq_++;
  slots_.emplace_back();
  ++in_flight_;
  update_counts();
  pause_if_full();

  child->set_options(child_options_);
  child_options_->apply_to_config(*child);
  auto self = shared_from_this();
  EventExecutor* server_loop = &ctx.channel().event_loop();
  auto handler = child_handler_;
  try {
    // The child handler (usually a ChannelInitializer) sets the pipeline up while the child
    // registers; auto_read is off, so nothing is read before the AsyncChannel is at the tail.
    Future<void> registered = child->register_channel([handler](SocketChannel& ch) {
      if (handler) ch.pipeline().add_last(handler);
    });
    // On the child's loop, once channel_registered and channel_active have gone through.
    registered.add_listener([self, server_loop, child, seq](const Future<void>& f) {
      auto arrival = std::make_unique<Arrival>();
      arrival->seq = seq;
      arrival->child = child;
      if (f.is_success()) {
        try {
          arrival->wrapped.emplace(self->wrap_(*child));
        } catch (const std::exception& e) {
          spdlog::warn("[id: 0x{}] AsyncServerChannel: wrapping an accepted channel failed: {}",
                       child->id().as_short_text(), e.what());
        }
      }
      try {
        server_loop->execute(
            [self, a = std::move(arrival)]() mutable { self->arrive(std::move(a)); });
      } catch (...) {
        // The server loop is shut down: the refused task's Arrival closed the child.
      }
    });
  } catch (...) {
    auto arrival = std::make_unique<Arrival>();
    arrival->seq = seq;
    arrival->child = std::move(child);
    ctx.fire_exception_caught(std::current_exception());
    arrive(std::move(arrival));
  }
}

void AsyncAcceptHandler::arrive(std::unique_ptr<Arrival> arrival) {
  if (abandoned_) return;  // the Arrival closes its child
  Slot& slot = slots_[static_cast<std::size_t>(arrival->seq - base_seq_)];
  slot.arrived = true;
  if (arrival->wrapped) {
    slot.child = std::move(arrival->child);
    slot.wrapped = std::move(arrival->wrapped);
  }
  // Children become ready in accept order, whichever loop finished setting them up first.
  while (!slots_.empty() && slots_.front().arrived) {
    Slot s = std::move(slots_.front());
    slots_.pop_front();
    ++base_seq_;
    --in_flight_;
    if (s.wrapped) ready_.push_back(Ready{std::move(s.child), std::move(*s.wrapped)});
  }
  update_counts();
  if (paused_.load(std::memory_order_relaxed) && !closed_ &&
      ready_.size() + in_flight_ < options_.low_watermark) {
    paused_.store(false, std::memory_order_relaxed);
    server_->config().set_auto_read(true);
  }
  if (has_event()) wake_waiter();
}

std::optional<Message> AsyncAcceptHandler::take() {
  if (ready_.empty()) return std::nullopt;
  Ready r = std::move(ready_.front());
  ready_.pop_front();
  update_counts();
  if (paused_.load(std::memory_order_relaxed) && !closed_ &&
      ready_.size() + in_flight_ < options_.low_watermark) {
    paused_.store(false, std::memory_order_relaxed);
    // Arms the next accept; nothing is delivered inline.
    server_->config().set_auto_read(true);
  }
  return std::move(r.wrapped);
}

void AsyncAcceptHandler::pause_if_full() {
  if (!paused_.load(std::memory_order_relaxed) &&
      ready_.size() + in_flight_ >= options_.high_watermark) {
    paused_.store(true, std::memory_order_relaxed);
    // ServerSocketChannel ends its accept batch as soon as auto_read goes off.
    server_->config().set_auto_read(false);
  }
}

void AsyncAcceptHandler::update_counts() noexcept {
  buffered_.store(ready_.size(), std::memory_order_relaxed);
  in_flight_count_.store(in_flight_, std::memory_order_relaxed);
}

void AsyncAcceptHandler::set_waiter(std::coroutine_handle<> h, EventExecutor* executor,
                                    bool& refused) {
  if (waiter_) throw IllegalStateError("AsyncServerChannel: another task is already in accept()");
  waiter_ = h;
  waiter_executor_ = executor;
  waiter_refused_ = &refused;
}

void AsyncAcceptHandler::wake_waiter() noexcept {
  if (!waiter_) return;
  std::coroutine_handle<> h = std::exchange(waiter_, {});
  resume_on_executor(waiter_executor_, h, *waiter_refused_);
}

void AsyncAcceptHandler::channel_inactive(ChannelHandlerContext& ctx) {
  closed_ = true;
  ctx.fire_channel_inactive();
  // Last: the woken task may run inline and drop the AsyncServerChannel.
  if (has_event()) wake_waiter();
}

void AsyncAcceptHandler::abandon() noexcept {
  abandoned_ = true;
  closed_ = true;
  std::deque<Ready> ready = std::move(ready_);
  ready_.clear();
  update_counts();
  try {
    for (auto& r : ready) r.child->close();
    if (server_ != nullptr) server_->close();
  } catch (...) {
    // A child's loop is shut down: its channels closed with it.
  }
}

void AsyncAcceptHandler::check_on_loop(const char* what) const {
  if (server_ == nullptr || !in_executor(server_->event_loop())) {
    throw IllegalStateError(std::string("AsyncServerChannel: ") + what +
                            " must be called on the server channel's event loop");
  }
}

}  // namespace trellis::detail
