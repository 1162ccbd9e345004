// ChannelHandlerContext: a handler's place in a pipeline. It passes inbound events to the next
// inbound handler (fire_*) and outbound operations to the previous outbound handler (write,
// flush, close, ...), and gives the handler its channel, pipeline, executor and allocator.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/channel_handler_mask.hpp>
#include <trellis/pipeline/detail/awaited_promise.hpp>
#include <trellis/pipeline/task.hpp>

namespace trellis {

class ByteBufAllocator;
class Channel;
class ChannelPipeline;
class EventExecutor;

/// A handler's place in a pipeline: it passes inbound events to the next inbound handler
/// (`fire_*`) and outbound operations to the previous outbound handler (`write`, `flush`,
/// `close`, ...), and gives the handler its channel, pipeline, executor and allocator. The
/// pipeline makes one per added handler and passes it to every callback of that handler.
///
/// Threading: inbound `fire_*` must be called on the channel's event loop (handler callbacks
/// always are; from another thread use the pipeline's `fire_*`, which posts). Outbound
/// operations may be called from any thread: off the loop they are posted to it, keeping this
/// context alive until they ran. Keep the channel alive while another thread holds its contexts.
///
/// A context stays usable while its handler's callback runs even if the handler is removed from
/// the pipeline meanwhile: an event in flight continues to the handlers that followed it.
///
/// Errors: an outbound operation without a promise allocates nothing and reports its failure as
/// `exception_caught` in the pipeline; with a promise, the failure goes to the promise only. An
/// operation posted to a loop that no longer takes tasks fails its promise with
/// RejectedExecutionError (without a promise, the call throws it); one whose pipeline was
/// destroyed before it ran fails its promise with ClosedChannelError.
class ChannelHandlerContext {
 public:
  ChannelHandlerContext(const ChannelHandlerContext&) = delete;
  ChannelHandlerContext& operator=(const ChannelHandlerContext&) = delete;
  /// Internal: contexts are created and freed by their pipeline.
  ~ChannelHandlerContext();

  /// The handler's name in the pipeline.
  const std::string& name() const noexcept { return name_; }
  /// The handler. Valid while the handler is in the pipeline, and while its callbacks run after
  /// a removal (a closed channel's removed contexts let go of their handlers shortly after the
  /// close).
  ChannelHandler& handler() const noexcept { return *handler_; }
  /// The handler's shared owner (empty once a removed context let go of it; see handler()).
  const std::shared_ptr<ChannelHandler>& handler_ptr() const noexcept { return handler_; }
  /// The channel of the pipeline.
  Channel& channel() const noexcept { return *channel_; }
  /// The pipeline the handler is in (or was in, once removed).
  ChannelPipeline& pipeline() const noexcept { return *pipeline_; }
  /// The channel's event loop, on which the handler's callbacks run.
  EventExecutor& executor() const noexcept { return *executor_; }
  /// The channel's allocator (`config().allocator()`).
  ByteBufAllocator& alloc() const noexcept;
  /// True once the handler was removed from its pipeline.
  bool is_removed() const noexcept { return removed_; }

  /// @name Inbound events
  /// Pass an event on to the next inbound handler (towards the tail). Call them on the channel's
  /// event loop only. An exception the next handler throws goes to `exception_caught` of the
  /// handler after it, never back to the caller.
  ///@{
  /// Passes `channel_registered` on.
  void fire_channel_registered();
  /// Passes `channel_unregistered` on.
  void fire_channel_unregistered();
  /// Passes `channel_active` on.
  void fire_channel_active();
  /// Passes `channel_inactive` on.
  void fire_channel_inactive();
  /// Passes a read message on to the next inbound handler's `channel_read`.
  void fire_channel_read(Message&& msg) {
    next_inbound(handler_mask::kChannelRead)->invoke_channel_read(std::move(msg));
  }
  /// Passes `channel_read_complete` on.
  void fire_channel_read_complete();
  /// Passes a user event on to the next inbound handler's `user_event_triggered`.
  void fire_user_event_triggered(Message&& event);
  /// Passes `channel_writability_changed` on.
  void fire_channel_writability_changed();
  /// Passes an exception on to the next inbound handler's `exception_caught`.
  void fire_exception_caught(std::exception_ptr error);
  ///@}

  /// @name Outbound operations
  /// Start an operation at the previous outbound handler (towards the head), skipping this
  /// handler and those after it; `channel().write(...)` starts again at the tail. From any
  /// thread. Without a promise nothing is allocated, and a failure is fired into the pipeline as
  /// `exception_caught` instead.
  ///@{
  /// Binds the channel to `local`.
  void bind(const SocketAddress& local, ChannelPromise promise = {});
  /// Connects the channel to `remote`.
  void connect(const SocketAddress& remote, ChannelPromise promise = {}) {
    connect(remote, std::nullopt, std::move(promise));
  }
  /// Connects the channel to `remote`, from `local` when given.
  void connect(const SocketAddress& remote, const std::optional<SocketAddress>& local,
               ChannelPromise promise = {});
  /// Disconnects the channel (closes a channel that cannot disconnect).
  void disconnect(ChannelPromise promise = {});
  /// Closes the channel; the promise completes once it has closed.
  void close(ChannelPromise promise = {});
  /// Asks for more inbound data (meaningful with `auto_read` off).
  void read();
  /// Writes `msg` (sent at the next flush); the promise completes when it was written.
  void write(Message&& msg, ChannelPromise promise = {});
  /// Sends what was written so far.
  void flush();
  /// `write(msg, promise)` then `flush()`.
  void write_and_flush(Message&& msg, ChannelPromise promise = {});
  /// Shuts the output down (half-close); the promise completes once it is.
  void shutdown_output(ChannelPromise promise = {});
  ///@}

  /// A promise whose listeners run on this channel's event loop.
  ChannelPromise new_promise() const;

  // --- coroutines -----------------------------------------------------------------------------
  /// `co_await ctx.write_async(msg)`: a write from this handler (as `write`, then completing when
  /// the write did, rethrowing its failure). The completion state lives in the awaiter, so an
  /// awaited write allocates nothing. The awaiting task resumes on its own executor.
  detail::WriteAwaiter<ChannelHandlerContext> write_async(Message msg) {
    return detail::WriteAwaiter<ChannelHandlerContext>(*this, std::move(msg), false, executor_);
  }
  /// `co_await ctx.write_and_flush_async(msg)`: as write_async(), then a flush.
  detail::WriteAwaiter<ChannelHandlerContext> write_and_flush_async(Message msg) {
    return detail::WriteAwaiter<ChannelHandlerContext>(*this, std::move(msg), true, executor_);
  }
  /// Runs `task` on the channel's event loop (call it there: IllegalStateError otherwise). The
  /// task keeps the channel (when it is owned by a shared_ptr) and this context alive; an
  /// exception escaping it is fired to `exception_caught` of the next inbound handler, as if this
  /// handler had thrown (and fails the returned future); when the channel goes inactive the task
  /// is cancelled (CancelledError at its next cancellation point). On a closed channel it is
  /// cancelled before it starts.
  Future<void> spawn(Task<void> task);

 private:
  friend class ChannelPipeline;
  friend class ChannelHandler;

  // Keeps a (possibly removed) context from being freed while a spawned task or an operation
  // posted from another thread may use it. A context its pipeline let go of while pinned (the
  // pipeline was destroyed) is "orphaned": the last pin frees it.
  class Pin {
   public:
    explicit Pin(ChannelHandlerContext* ctx) noexcept : ctx_(ctx) { ctx_->pin(); }
    Pin(Pin&& o) noexcept : ctx_(std::exchange(o.ctx_, nullptr)) {}
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    ~Pin() {
      if (ctx_ != nullptr) ctx_->unpin();
    }
    ChannelHandlerContext* get() const noexcept { return ctx_; }

   private:
    ChannelHandlerContext* ctx_;
  };
  static constexpr std::uint32_t kOrphaned = 1u << 31;
  void pin() noexcept { pins_.fetch_add(1, std::memory_order_relaxed); }
  void unpin() noexcept {
    if (pins_.fetch_sub(1, std::memory_order_acq_rel) == (kOrphaned | 1)) delete this;
  }
  // True once the pipeline that owned this context is gone (only a pinned context outlives it).
  bool is_orphaned() const noexcept {
    return (pins_.load(std::memory_order_acquire) & kOrphaned) != 0;
  }
  // A removed context of a closed channel lets go of its handler; events and operations that
  // still come through it pass it by.
  void release_handler() noexcept {
    mask_ = 0;
    inbound_ = nullptr;
    outbound_ = nullptr;
    handler_.reset();
  }
  // The pipeline lets go of this context: freed now, or by its last pin.
  static void release(ChannelHandlerContext* ctx) noexcept {
    if (ctx->pins_.fetch_or(kOrphaned, std::memory_order_acq_rel) == 0) delete ctx;
  }
  static Task<void> run_spawned(Pin pin, std::shared_ptr<Channel> owner, Task<void> body);

  // mask: the events the handler overrides (handler_mask); those it does not pass it by.
  ChannelHandlerContext(ChannelPipeline& pipeline, Channel& channel, std::string name,
                        std::shared_ptr<ChannelHandler> handler,
                        std::uint32_t mask = handler_mask::kAll);

  // The next context towards the tail whose handler takes the event (the tail takes them all).
  ChannelHandlerContext* next_inbound(std::uint32_t event) const noexcept {
    ChannelHandlerContext* c = next_;
    while ((c->mask_ & event) == 0) c = c->next_;
    return c;
  }
  // The next context towards the head whose handler takes the operation (the head takes all).
  ChannelHandlerContext* prev_outbound(std::uint32_t operation) const noexcept {
    ChannelHandlerContext* c = prev_;
    while ((c->mask_ & operation) == 0) c = c->prev_;
    return c;
  }

  void invoke_channel_read(Message&& msg) noexcept {
    try {
      inbound_->channel_read(*this, std::move(msg));
    } catch (...) {
      on_handler_exception(std::current_exception());
    }
  }
  void invoke_channel_registered() noexcept;
  void invoke_channel_unregistered() noexcept;
  void invoke_channel_active() noexcept;
  void invoke_channel_inactive() noexcept;
  void invoke_channel_read_complete() noexcept;
  void invoke_user_event_triggered(Message&& event) noexcept;
  void invoke_channel_writability_changed() noexcept;
  void invoke_exception_caught(std::exception_ptr error) noexcept;

  void invoke_bind(const SocketAddress& local, ChannelPromise&& promise) noexcept;
  void invoke_connect(const SocketAddress& remote, const std::optional<SocketAddress>& local,
                      ChannelPromise&& promise) noexcept;
  void invoke_disconnect(ChannelPromise&& promise) noexcept;
  void invoke_close(ChannelPromise&& promise) noexcept;
  void invoke_read() noexcept;
  void invoke_write(Message&& msg, ChannelPromise&& promise) noexcept;
  void invoke_flush() noexcept;
  void invoke_shutdown_output(ChannelPromise&& promise) noexcept;

  // A handler of this context threw: pass the exception to the next inbound handler.
  void on_handler_exception(std::exception_ptr error) noexcept;
  // An outbound operation threw: fail its promise, or fire the exception when it has none.
  void on_outbound_exception(std::exception_ptr error, ChannelPromise& promise) noexcept;
  // Runs fn(*this, promise) on the event loop, keeping this context alive until then. If the
  // pipeline is gone by then, or the loop refuses the task, fn does not run and the promise
  // fails with ClosedChannelError or the refusal (a void promise: the refusal is thrown).
  template <class Fn>
  void run_on_loop(ChannelPromise&& promise, Fn&& fn);

  ChannelHandlerContext* prev_ = nullptr;
  ChannelHandlerContext* next_ = nullptr;
  ChannelInboundHandler* inbound_ = nullptr;
  ChannelOutboundHandler* outbound_ = nullptr;
  std::uint32_t mask_ = 0;  // handler_mask bits of the events the handler takes (0: none)
  ChannelPipeline* pipeline_;
  Channel* channel_;
  EventExecutor* executor_;
  std::shared_ptr<ChannelHandler> handler_;
  std::string name_;
  bool removed_ = false;
  // Operations posted from other threads and spawned tasks that still refer to this context: a
  // removed context is freed only once none is left. The top bit is kOrphaned.
  std::atomic<std::uint32_t> pins_{0};
};

}  // namespace trellis
