// Event propagation between handler contexts (see channel_handler_context.hpp).
#include <trellis/pipeline/channel_handler_context.hpp>

#include <spdlog/spdlog.h>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/event_executor.hpp>

#include "pipeline_internal.hpp"

namespace trellis {

ChannelHandlerContext::ChannelHandlerContext(ChannelPipeline& pipeline, Channel& channel,
                                             std::string name,
                                             std::shared_ptr<ChannelHandler> handler,
                                             std::uint32_t mask)
    : pipeline_(&pipeline),
      channel_(&channel),
      executor_(&channel.event_loop()),
      handler_(std::move(handler)),
      name_(std::move(name)) {
  inbound_ = handler_->as_inbound();
  outbound_ = handler_->as_outbound();
  mask_ = mask & ((inbound_ != nullptr ? handler_mask::kInbound : 0) |
                  (outbound_ != nullptr ? handler_mask::kOutbound : 0));
}

ChannelHandlerContext::~ChannelHandlerContext() = default;

ByteBufAllocator& ChannelHandlerContext::alloc() const noexcept {
  return channel_->config().allocator();
}

ChannelPromise ChannelHandlerContext::new_promise() const {
  return ChannelPromise::make(executor_);
}

// --- inbound -----------------------------------------------------------------------------------

void ChannelHandlerContext::fire_channel_registered() {
  next_inbound(handler_mask::kChannelRegistered)->invoke_channel_registered();
}
void ChannelHandlerContext::fire_channel_unregistered() {
  next_inbound(handler_mask::kChannelUnregistered)->invoke_channel_unregistered();
}
void ChannelHandlerContext::fire_channel_active() {
  next_inbound(handler_mask::kChannelActive)->invoke_channel_active();
}
void ChannelHandlerContext::fire_channel_inactive() {
  next_inbound(handler_mask::kChannelInactive)->invoke_channel_inactive();
}
void ChannelHandlerContext::fire_channel_read_complete() {
  next_inbound(handler_mask::kChannelReadComplete)->invoke_channel_read_complete();
}
void ChannelHandlerContext::fire_user_event_triggered(Message&& event) {
  next_inbound(handler_mask::kUserEventTriggered)->invoke_user_event_triggered(std::move(event));
}
void ChannelHandlerContext::fire_channel_writability_changed() {
  next_inbound(handler_mask::kChannelWritabilityChanged)->invoke_channel_writability_changed();
}
void ChannelHandlerContext::fire_exception_caught(std::exception_ptr error) {
  next_inbound(handler_mask::kExceptionCaught)->invoke_exception_caught(std::move(error));
}

#define TRELLIS_GUARDED_INBOUND(call)               \
  try {                                             \
    call;                                           \
  } catch (...) {                                   \
    on_handler_exception(std::current_exception()); \
  }

void ChannelHandlerContext::invoke_channel_registered() noexcept {
  TRELLIS_GUARDED_INBOUND(inbound_->channel_registered(*this))
}
void ChannelHandlerContext::invoke_channel_unregistered() noexcept {
  TRELLIS_GUARDED_INBOUND(inbound_->channel_unregistered(*this))
}
void ChannelHandlerContext::invoke_channel_active() noexcept {
  TRELLIS_GUARDED_INBOUND(inbound_->channel_active(*this))
}
void ChannelHandlerContext::invoke_channel_inactive() noexcept {
  TRELLIS_GUARDED_INBOUND(inbound_->channel_inactive(*this))
}
void ChannelHandlerContext::invoke_channel_read_complete() noexcept {
  TRELLIS_GUARDED_INBOUND(inbound_->channel_read_complete(*this))
}
void ChannelHandlerContext::invoke_user_event_triggered(Message&& event) noexcept {
  TRELLIS_GUARDED_INBOUND(inbound_->user_event_triggered(*this, std::move(event)))
}
void ChannelHandlerContext::invoke_channel_writability_changed() noexcept {
  TRELLIS_GUARDED_INBOUND(inbound_->channel_writability_changed(*this))
}
#undef TRELLIS_GUARDED_INBOUND

void ChannelHandlerContext::invoke_exception_caught(std::exception_ptr error) noexcept {
  try {
    inbound_->exception_caught(*this, error);
  } catch (...) {
    // Passing it on again could loop; report both and stop here (as Netty does).
    spdlog::warn("handler '{}' threw from exception_caught ({}) while handling: {}", name_,
                 detail::describe_exception(std::current_exception()),
                 detail::describe_exception(error));
  }
}

void ChannelHandlerContext::on_handler_exception(std::exception_ptr error) noexcept {
  fire_exception_caught(std::move(error));
}

// --- outbound ----------------------------------------------------------------------------------

void ChannelHandlerContext::on_outbound_exception(std::exception_ptr error,
                                                  ChannelPromise& promise) noexcept {
  if (promise.is_void()) {
    on_handler_exception(std::move(error));
  } else {
    promise.try_set_exception(std::move(error));
  }
}

template <class Fn>
void ChannelHandlerContext::run_on_loop(ChannelPromise&& promise, Fn&& fn) {
  // The pin keeps this context (not its neighbours: see ChannelPipeline::Graveyard) until the
  // task ran. The channel's owner may drop it meanwhile: the task then finds it orphaned.
  Pin pin(this);
  ChannelPromise keep = promise;  // null copy when void
  try {
    executor_->execute(
        [pin = std::move(pin), p = std::move(promise), f = std::forward<Fn>(fn)]() mutable {
          ChannelHandlerContext* self = pin.get();
          if (self->is_orphaned()) {
            p.try_set_exception(
                ClosedChannelError("channel closed and released before the operation ran"));
            return;
          }
          f(*self, std::move(p));
        });
  } catch (...) {
    // The loop no longer takes tasks (it shut down): the operation fails, nothing runs.
    if (keep.is_void()) throw;
    keep.try_set_exception(std::current_exception());
  }
}

#define TRELLIS_GUARDED_OUTBOUND(promise, call)            \
  ChannelPromise keep = promise; /* null copy when void */ \
  try {                                                    \
    call;                                                  \
  } catch (...) {                                          \
    on_outbound_exception(std::current_exception(), keep); \
  }

void ChannelHandlerContext::invoke_bind(const SocketAddress& local,
                                        ChannelPromise&& promise) noexcept {
  TRELLIS_GUARDED_OUTBOUND(promise, outbound_->bind(*this, local, std::move(promise)))
}
void ChannelHandlerContext::invoke_connect(const SocketAddress& remote,
                                           const std::optional<SocketAddress>& local,
                                           ChannelPromise&& promise) noexcept {
  TRELLIS_GUARDED_OUTBOUND(promise, outbound_->connect(*this, remote, local, std::move(promise)))
}
void ChannelHandlerContext::invoke_disconnect(ChannelPromise&& promise) noexcept {
  TRELLIS_GUARDED_OUTBOUND(promise, outbound_->disconnect(*this, std::move(promise)))
}
void ChannelHandlerContext::invoke_close(ChannelPromise&& promise) noexcept {
  TRELLIS_GUARDED_OUTBOUND(promise, outbound_->close(*this, std::move(promise)))
}
void ChannelHandlerContext::invoke_write(Message&& msg, ChannelPromise&& promise) noexcept {
  TRELLIS_GUARDED_OUTBOUND(promise, outbound_->write(*this, std::move(msg), std::move(promise)))
}
void ChannelHandlerContext::invoke_shutdown_output(ChannelPromise&& promise) noexcept {
  TRELLIS_GUARDED_OUTBOUND(promise, outbound_->shutdown_output(*this, std::move(promise)))
}
#undef TRELLIS_GUARDED_OUTBOUND

void ChannelHandlerContext::invoke_read() noexcept {
  try {
    outbound_->read(*this);
  } catch (...) {
    on_handler_exception(std::current_exception());
  }
}
void ChannelHandlerContext::invoke_flush() noexcept {
  try {
    outbound_->flush(*this);
  } catch (...) {
    on_handler_exception(std::current_exception());
  }
}

void ChannelHandlerContext::bind(const SocketAddress& local, ChannelPromise promise) {
  if (detail::in_executor(*executor_)) {
    prev_outbound(handler_mask::kBind)->invoke_bind(local, std::move(promise));
  } else {
    run_on_loop(std::move(promise), [local](ChannelHandlerContext& c, ChannelPromise&& p) {
      c.bind(local, std::move(p));
    });
  }
}

void ChannelHandlerContext::connect(const SocketAddress& remote,
                                    const std::optional<SocketAddress>& local,
                                    ChannelPromise promise) {
  if (detail::in_executor(*executor_)) {
    prev_outbound(handler_mask::kConnect)->invoke_connect(remote, local, std::move(promise));
  } else {
    run_on_loop(std::move(promise), [remote, local](ChannelHandlerContext& c, ChannelPromise&& p) {
      c.connect(remote, local, std::move(p));
    });
  }
}

void ChannelHandlerContext::disconnect(ChannelPromise promise) {
  if (detail::in_executor(*executor_)) {
    prev_outbound(handler_mask::kDisconnect)->invoke_disconnect(std::move(promise));
  } else {
    run_on_loop(std::move(promise),
                [](ChannelHandlerContext& c, ChannelPromise&& p) { c.disconnect(std::move(p)); });
  }
}

void ChannelHandlerContext::close(ChannelPromise promise) {
  if (detail::in_executor(*executor_)) {
    prev_outbound(handler_mask::kClose)->invoke_close(std::move(promise));
  } else {
    run_on_loop(std::move(promise),
                [](ChannelHandlerContext& c, ChannelPromise&& p) { c.close(std::move(p)); });
  }
}

void ChannelHandlerContext::read() {
  if (detail::in_executor(*executor_)) {
    prev_outbound(handler_mask::kRead)->invoke_read();
  } else {
    run_on_loop({}, [](ChannelHandlerContext& c, ChannelPromise&&) { c.read(); });
  }
}

void ChannelHandlerContext::write(Message&& msg, ChannelPromise promise) {
  if (detail::in_executor(*executor_)) {
    prev_outbound(handler_mask::kWrite)->invoke_write(std::move(msg), std::move(promise));
  } else {
    run_on_loop(std::move(promise),
                [m = std::move(msg)](ChannelHandlerContext& c, ChannelPromise&& p) mutable {
                  c.write(std::move(m), std::move(p));
                });
  }
}

void ChannelHandlerContext::flush() {
  if (detail::in_executor(*executor_)) {
    prev_outbound(handler_mask::kFlush)->invoke_flush();
  } else {
    run_on_loop({}, [](ChannelHandlerContext& c, ChannelPromise&&) { c.flush(); });
  }
}

void ChannelHandlerContext::shutdown_output(ChannelPromise promise) {
  if (detail::in_executor(*executor_)) {
    prev_outbound(handler_mask::kShutdownOutput)->invoke_shutdown_output(std::move(promise));
  } else {
    run_on_loop(std::move(promise), [](ChannelHandlerContext& c, ChannelPromise&& p) {
      c.shutdown_output(std::move(p));
    });
  }
}

void ChannelHandlerContext::write_and_flush(Message&& msg, ChannelPromise promise) {
  write(std::move(msg), std::move(promise));
  flush();
}

// --- coroutines --------------------------------------------------------------------------------

Future<void> ChannelHandlerContext::spawn(Task<void> task) {
  if (!detail::in_executor(*executor_)) {
    throw IllegalStateError("ChannelHandlerContext::spawn must be called on the channel's loop");
  }
  Future<void> future =
      executor_->spawn(run_spawned(Pin(this), channel_->shared_owner(), std::move(task)));
  if (channel_->is_open()) {
    pipeline_->add_spawned_task(future);
  } else {
    future.cancel();  // queued, not started: it never runs
  }
  return future;
}

Task<void> ChannelHandlerContext::run_spawned(Pin pin, std::shared_ptr<Channel> owner,
                                              Task<void> body) {
  std::exception_ptr error;
  try {
    co_await std::move(body);
  } catch (const CancelledError&) {
    throw;  // cancellation is not a fault of the handler
  } catch (...) {
    error = std::current_exception();
  }
  if (error) {
    ChannelHandlerContext* ctx = pin.get();
    if (!ctx->is_removed()) {
      ctx->fire_exception_caught(error);
    } else {
      // The handler left its pipeline: its neighbours may be gone, so enter at the head.
      ctx->channel().pipeline().fire_exception_caught(error);
    }
    std::rethrow_exception(error);  // the future reports it too
  }
  (void)owner;
}

}  // namespace trellis
