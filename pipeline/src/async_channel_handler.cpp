// The handler behind AsyncChannel (see detail/async_channel_handler.hpp).
#include <trellis/pipeline/detail/async_channel_handler.hpp>

#include <utility>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_events.hpp>

namespace trellis::detail {

std::optional<Message> AsyncChannelHandler::take() {
  if (buffer_.empty()) return std::nullopt;
  Message msg = buffer_.take_front();
  if (paused_ && buffer_.size() < options_.low_watermark) {
    paused_ = false;
    // May deliver more messages right here (they are queued behind this one).
    if (channel_->is_open()) channel_->config().set_auto_read(true);
  }
  if (auto* failure = msg.try_get<InboundFailure>()) {
    std::exception_ptr error = std::move(failure->error);
    std::rethrow_exception(error);
  }
  return msg;
}

void AsyncChannelHandler::set_reader(std::coroutine_handle<> h, EventExecutor* executor,
                                     bool& refused) {
  if (reader_) throw IllegalStateError("AsyncChannel: another task is already awaiting next()");
  reader_ = h;
  reader_executor_ = executor;
  reader_refused_ = &refused;
}

bool AsyncChannelHandler::must_wait_writable() const noexcept {
  return ctx_ != nullptr && channel_->is_open() && !channel_->is_writable();
}

void AsyncChannelHandler::add_writer(WritableWaiter* w) noexcept {
  w->next_ = nullptr;
  if (writers_tail_ != nullptr) {
    writers_tail_->next_ = w;
  } else {
    writers_head_ = w;
  }
  writers_tail_ = w;
}

void AsyncChannelHandler::remove_writer(WritableWaiter* w) noexcept {
  WritableWaiter* prev = nullptr;
  for (WritableWaiter* c = writers_head_; c != nullptr; prev = c, c = c->next_) {
    if (c != w) continue;
    (prev != nullptr ? prev->next_ : writers_head_) = c->next_;
    if (writers_tail_ == c) writers_tail_ = prev;
    c->next_ = nullptr;
    return;
  }
}

void AsyncChannelHandler::detach() {
  if (ctx_ != nullptr) ctx_->pipeline().remove(*this);
}

void AsyncChannelHandler::push(Message&& msg) {
  buffer_.push_back(std::move(msg));
  if (!paused_ && buffer_.size() >= options_.high_watermark) {
    paused_ = true;
    channel_->config().set_auto_read(false);
  }
  wake_reader();
}

void AsyncChannelHandler::end_stream() noexcept {
  ended_ = true;
  wake_reader();
}

void AsyncChannelHandler::wake_reader() noexcept {
  if (!reader_) return;
  std::coroutine_handle<> h = std::exchange(reader_, {});
  resume_on_executor(reader_executor_, h, *reader_refused_);
}

void AsyncChannelHandler::wake_writers() noexcept {
  // One at a time: a woken writer's write may make the channel unwritable again.
  while (writers_head_ != nullptr && !must_wait_writable()) {
    WritableWaiter* w = writers_head_;
    writers_head_ = w->next_;
    if (writers_head_ == nullptr) writers_tail_ = nullptr;
    w->next_ = nullptr;
    w->on_writable();
  }
}

void AsyncChannelHandler::handler_added(ChannelHandlerContext& ctx) {
  ctx_ = &ctx;
  if (!channel_->is_open()) ended_ = true;
}

void AsyncChannelHandler::handler_removed(ChannelHandlerContext&) {
  ctx_ = nullptr;  // from here on nobody waits for writability (must_wait_writable is false)
  if (paused_) {
    paused_ = false;
    if (channel_->is_open()) channel_->config().set_auto_read(true);
  }
  end_stream();
  wake_writers();
}

void AsyncChannelHandler::channel_read(ChannelHandlerContext&, Message msg) {
  push(std::move(msg));
}

void AsyncChannelHandler::channel_inactive(ChannelHandlerContext& ctx) {
  end_stream();
  wake_writers();  // their writes fail with ClosedChannelError
  ctx.fire_channel_inactive();
}

void AsyncChannelHandler::user_event_triggered(ChannelHandlerContext& ctx, Message event) {
  if (event.is<ChannelInputShutdownEvent>()) end_stream();
  ctx.fire_user_event_triggered(std::move(event));
}

void AsyncChannelHandler::channel_writability_changed(ChannelHandlerContext& ctx) {
  wake_writers();
  ctx.fire_channel_writability_changed();
}

void AsyncChannelHandler::exception_caught(ChannelHandlerContext&, std::exception_ptr error) {
  push(Message(InboundFailure{std::move(error)}));
}

}  // namespace trellis::detail

namespace trellis::detail {

void AsyncChannelHandler::check_on_loop(const char* what) const {
  if (!in_executor(channel_->event_loop())) {
    throw IllegalStateError(std::string("AsyncChannel: ") + what +
                            " must be called on the channel's event loop");
  }
}

std::shared_ptr<AsyncChannelHandler> install_async_channel_handler(Channel& channel,
                                                                   AsyncChannelOptions options) {
  if (!in_executor(channel.event_loop())) {
    throw IllegalStateError("AsyncChannel::wrap must be called on the channel's event loop");
  }
  if (options.low_watermark == 0 || options.low_watermark > options.high_watermark) {
    throw InvalidArgumentError("AsyncChannelOptions: need 0 < low_watermark (" +
                               std::to_string(options.low_watermark) + ") <= high_watermark (" +
                               std::to_string(options.high_watermark) + ")");
  }
  auto handler = std::make_shared<AsyncChannelHandler>(channel, options);
  channel.pipeline().add_last("async-channel", handler);
  if (!channel.config().auto_read()) channel.config().set_auto_read(true);
  return handler;
}

void throw_async_wrong_type(std::string_view wanted, std::string_view held) {
  std::string text("AsyncChannel inbound: expected a ");
  text.append(wanted).append(", but the message is a ").append(held);
  throw WrongTypeError(text);
}

}  // namespace trellis::detail
