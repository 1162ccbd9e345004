// AsyncChannel<In, Out>: a channel seen from coroutines, as SwiftNIO's NIOAsyncChannel: an inbound
// stream of the messages that reach the pipeline's tail and an outbound writer, on the channel's
// loop, resuming inline and allocating nothing per message in steady state.
#pragma once

#include <exception>
#include <iterator>
#include <memory>
#include <optional>
#include <ranges>
#include <type_traits>
#include <utility>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/detail/async_channel_handler.hpp>
#include <trellis/pipeline/detail/awaited_promise.hpp>

namespace trellis {

template <class In, class Out>
class AsyncChannel;

namespace detail {

// co_await inbound.next(): the next message (nullopt at the end of the stream). A cancellation
// point while it waits.
template <class In>
class NextAwaiter final : private CancelHook {
 public:
  explicit NextAwaiter(AsyncChannelHandler& handler) noexcept : handler_(&handler) {}
  NextAwaiter(const NextAwaiter&) = delete;
  NextAwaiter& operator=(const NextAwaiter&) = delete;

  bool await_ready() const noexcept { return handler_->has_event(); }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    ctx_ = task_context_of(h);
    if (ctx_ != nullptr && ctx_->cancel_requested) {
      cancelled_ = true;
      return false;
    }
    handler_->set_reader(h, awaiting_executor(h), refused_);
    handle_ = h;
    if (ctx_ != nullptr) ctx_->cancel_hook = this;
    return true;
  }
  std::optional<In> await_resume() {
    if (ctx_ != nullptr && ctx_->cancel_hook == static_cast<CancelHook*>(this)) {
      ctx_->cancel_hook = nullptr;
    }
    if (cancelled_) throw_cancelled();
    if (refused_) throw_resumption_refused();
    std::optional<Message> msg = handler_->take();
    if (!msg) return std::nullopt;
    if constexpr (std::is_same_v<In, Message>) {
      return msg;
    } else {
      // A message of another type is consumed (the stream goes on) and reported.
      if (!msg->template is<In>()) throw_async_wrong_type(Message::name_of<In>(), msg->type_name());
      return msg->template take<In>();
    }
  }

 private:
  void on_cancel() noexcept override {
    handler_->clear_reader();
    cancelled_ = true;
    handle_.resume();
  }

  AsyncChannelHandler* handler_;
  TaskContext* ctx_ = nullptr;
  std::coroutine_handle<> handle_;
  bool cancelled_ = false;
  bool refused_ = false;  // set before the resumption if the executor refused it
};

// The writes of an AsyncChannel: wait while the channel is unwritable (a cancellation point),
// then write and flush, and complete when the writes did.
class AsyncWriteAwaiterBase : protected AwaitedOperation,
                              private WritableWaiter,
                              private CancelHook {
 public:
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    ctx_ = task_context_of(h);
    if (ctx_ != nullptr && ctx_->cancel_requested) {
      cancelled_ = true;
      return false;
    }
    begin(h, awaiting_executor(h), states());
    if (handler_->must_wait_writable()) {
      waiting_ = true;
      handler_->add_writer(this);
      if (ctx_ != nullptr) ctx_->cancel_hook = this;
      return true;
    }
    issue_guarded();
    // Nothing to wait for when the operation handed out no promise state.
    return states() != 0 && finish_issuing();
  }

 protected:
  explicit AsyncWriteAwaiterBase(AsyncChannelHandler& handler) noexcept : handler_(&handler) {}
  ~AsyncWriteAwaiterBase() = default;

  Channel& channel() const noexcept { return handler_->channel(); }
  EventExecutor* loop() const noexcept { return &handler_->channel().event_loop(); }
  // Throws CancelledError or the failure of issuing.
  void check_issued() const {
    if (cancelled_) throw_cancelled();
    check_resumed();
    if (issue_error_) std::rethrow_exception(issue_error_);
  }

 private:
  // How many AwaitedPromiseStates issue() hands out, and the writes themselves.
  virtual int states() const noexcept = 0;
  virtual void issue() = 0;

  void issue_guarded() noexcept {
    try {
      issue();
    } catch (...) {
      issue_error_ = std::current_exception();
    }
  }
  void on_writable() noexcept override {
    waiting_ = false;
    if (ctx_ != nullptr && ctx_->cancel_hook == static_cast<CancelHook*>(this)) {
      ctx_->cancel_hook = nullptr;
    }
    issue_guarded();
    if (states() == 0) {
      resume_task();
    } else {
      finish_issuing_suspended();
    }
  }
  void on_cancel() noexcept override {
    if (!waiting_) return;
    waiting_ = false;
    handler_->remove_writer(this);
    cancelled_ = true;
    handle().resume();
  }

  AsyncChannelHandler* handler_;
  TaskContext* ctx_ = nullptr;
  std::exception_ptr issue_error_;
  bool waiting_ = false;
  bool cancelled_ = false;
};

// write(): completes when the write completed, or (AsyncWriteCompletion::queued) once it is
// queued and flushed, with the void promise.
class AsyncWriteAwaiter final : public AsyncWriteAwaiterBase {
 public:
  AsyncWriteAwaiter(AsyncChannelHandler& handler, Message&& msg) noexcept
      : AsyncWriteAwaiterBase(handler),
        msg_(std::move(msg)),
        state_(*this, loop()),
        queued_(handler.options().write_completion == AsyncWriteCompletion::queued) {}
  bool await_ready() const noexcept { return false; }
  void await_resume() const {
    check_issued();
    if (!queued_) state_.rethrow_if_failed_or_dropped();
  }

 private:
  int states() const noexcept override { return queued_ ? 0 : 1; }
  void issue() override {
    if (queued_) {
      // Nobody would see this write fail: a closed channel is reported here.
      if (!channel().is_open()) throw ClosedChannelError();
      channel().write(std::move(msg_));
    } else {
      channel().write(std::move(msg_), state_.take_promise());
    }
    channel().flush();
  }

  Message msg_;
  AwaitedPromiseState state_;
  bool queued_;
};

// write_all: one flush for all. The first n-1 writes share one promise state and the last has its
// own: the result is the first write's failure, else the last one's (writes complete in order, and
// a write that fails under auto_close closes the channel, which fails the rest).
template <class R, class Out>
class AsyncWriteAllAwaiter final : public AsyncWriteAwaiterBase {
 public:
  AsyncWriteAllAwaiter(AsyncChannelHandler& handler, R&& range)
      : AsyncWriteAwaiterBase(handler),
        range_(std::forward<R>(range)),
        count_(static_cast<std::size_t>(std::ranges::distance(range_))),
        first_(*this, loop()),
        last_(*this, loop()) {}
  bool await_ready() const noexcept { return count_ == 0; }
  void await_resume() const {
    if (count_ == 0) return;
    check_issued();
    if (count_ > 1) first_.rethrow_if_failed_or_dropped();
    last_.rethrow_if_failed_or_dropped();
  }

 private:
  static constexpr bool kMove = !std::is_lvalue_reference_v<R>;
  template <class V>
  static Out make_out(V& v) {
    if constexpr (kMove) {
      return Out(std::move(v));
    } else {
      return Out(v);
    }
  }
  int states() const noexcept override { return count_ > 1 ? 2 : 1; }
  void issue() override {
    Channel& ch = channel();
    // Both promises are taken first, so that every state is released however this ends.
    ChannelPromise shared = count_ > 1 ? first_.take_promise() : ChannelPromise();
    ChannelPromise last = last_.take_promise();
    try {
      std::size_t i = 0;
      for (auto&& v : range_) {
        Message msg(make_out(v));
        if (++i < count_) {
          ch.write(std::move(msg), shared);
        } else {
          ch.write(std::move(msg), std::move(last));
          break;
        }
      }
    } catch (...) {
      // A copy threw: what was written goes out (its promises are released when it is written),
      // the awaiter reports the exception.
      shared.try_set_exception(std::current_exception());
      last.try_set_exception(std::current_exception());
      shared = ChannelPromise();
      ch.flush();
      throw;
    }
    shared = ChannelPromise();
    ch.flush();
  }

  R range_;
  std::size_t count_;
  AwaitedPromiseState first_;
  AwaitedPromiseState last_;
};

}  // namespace detail

/// The inbound side of an AsyncChannel: `co_await next()` for each message. Used on the
/// channel's event loop.
template <class In>
class AsyncChannelInbound {
 public:
  /// The next message that reached the pipeline's tail, as In; nullopt once the stream ended (the
  /// channel went inactive, or its input was shut down under half-closure). An exception that
  /// reached the tail is thrown here, in order with the messages; a message of another type
  /// throws WrongTypeError naming both types (the message is dropped, the stream goes on). One
  /// task at a time may await next(), on the channel's event loop.
  detail::NextAwaiter<In> next() {
    handler_->check_on_loop("next()");
    return detail::NextAwaiter<In>(*handler_);
  }
  /// Messages (and exceptions) received and not yet taken by next().
  std::size_t buffered() const noexcept { return handler_->buffered(); }
  /// True while back-pressure has stopped the channel reading.
  bool reading_paused() const noexcept { return handler_->reading_paused(); }

 private:
  template <class, class>
  friend class AsyncChannel;
  explicit AsyncChannelInbound(detail::AsyncChannelHandler* handler) noexcept : handler_(handler) {}

  detail::AsyncChannelHandler* handler_;
};

/// The outbound side of an AsyncChannel: awaited writes through the whole pipeline (from its
/// tail), on the channel's event loop (IllegalStateError elsewhere). A write fails with the
/// write's failure (ClosedChannelError once closed); a cancelled task gets CancelledError.
template <class Out>
class AsyncChannelOutbound {
 public:
  /// Writes and flushes value; completes when the write completed (its failure is thrown). Waits
  /// first while the channel is unwritable.
  detail::AsyncWriteAwaiter write(Out value) {
    handler_->check_on_loop("write()");
    return detail::AsyncWriteAwaiter(*handler_, Message(std::move(value)));
  }
  /// Writes every element (moved out of an rvalue range, copied from an lvalue one) with one
  /// flush; completes when they completed.
  template <std::ranges::forward_range R>
  detail::AsyncWriteAllAwaiter<R, Out> write_all(R&& range) {
    handler_->check_on_loop("write_all()");
    return detail::AsyncWriteAllAwaiter<R, Out>(*handler_, std::forward<R>(range));
  }
  /// Shuts the output down (half-close: the peer reads the end of stream, our input stays open).
  Future<void> finish() { return handler_->channel().shutdown_output(); }

 private:
  template <class, class>
  friend class AsyncChannel;
  explicit AsyncChannelOutbound(detail::AsyncChannelHandler* handler) noexcept
      : handler_(handler) {}

  detail::AsyncChannelHandler* handler_;
};

/// A channel seen from coroutines (as SwiftNIO's NIOAsyncChannel): an inbound stream of the
/// messages of type `In` that reach the pipeline's tail, and an outbound writer of `Out`
/// messages. It resumes tasks inline on the channel's loop and allocates nothing per message in
/// steady state. Threading: use it from tasks on the channel's event loop (see event_loop()).
/// When the channel is owned by a shared_ptr it may be destroyed on any thread (the bridge is
/// taken out on the loop).
template <class In, class Out>
class AsyncChannel {
 public:
  /// The inbound side's type.
  using Inbound = AsyncChannelInbound<In>;
  /// The outbound side's type.
  using Outbound = AsyncChannelOutbound<Out>;

  /// Installs the bridge at the tail of channel's pipeline, on the channel's event loop
  /// (IllegalStateError elsewhere), and turns auto_read on: reading is paced by the inbound
  /// watermarks from now on. Keeps the channel alive (when it is owned by a shared_ptr) as long
  /// as this object lives.
  static AsyncChannel wrap(Channel& channel, AsyncChannelOptions options = {}) {
    return AsyncChannel(detail::install_async_channel_handler(channel, options),
                        channel.shared_owner());
  }

  /// Takes over `o`'s bridge; `o` is left empty.
  AsyncChannel(AsyncChannel&& o) noexcept
      : handler_(std::move(o.handler_)),
        owner_(std::move(o.owner_)),
        inbound_(o.inbound_),
        outbound_(o.outbound_) {}
  /// Takes the bridge out of the pipeline as the destructor does, then takes over `o`'s.
  AsyncChannel& operator=(AsyncChannel&& o) noexcept {
    if (this != &o) {
      reset();
      handler_ = std::move(o.handler_);
      owner_ = std::move(o.owner_);
      inbound_ = o.inbound_;
      outbound_ = o.outbound_;
    }
    return *this;
  }
  AsyncChannel(const AsyncChannel&) = delete;
  AsyncChannel& operator=(const AsyncChannel&) = delete;
  /// Takes the bridge out of the pipeline (buffered messages are dropped); does not close.
  ~AsyncChannel() { reset(); }

  /// The inbound stream.
  Inbound& inbound() noexcept { return inbound_; }
  /// The outbound writer.
  Outbound& outbound() noexcept { return outbound_; }
  /// The wrapped channel.
  Channel& channel() const noexcept { return handler_->channel(); }
  /// The channel's event loop: inbound(), outbound(), close() and execute_then_close() are used
  /// from tasks running there, e.g. `ac.event_loop().spawn(serve(std::move(ac)))` for a server's
  /// child, which may live on another loop than the task that accepted it.
  EventExecutor& event_loop() const noexcept { return handler_->channel().event_loop(); }

  /// Closes the channel; the future completes when it is closed.
  Future<void> close() {
    Channel& ch = channel();
    ChannelPromise promise = ch.new_promise();
    Future<void> done = promise.future();
    ch.close(std::move(promise));
    return done;
  }

  /// Runs body(inbound, outbound) and closes the channel afterwards, whether the body returned or
  /// threw; the body's exception is rethrown after the close, its result returned.
  template <class Body>
  auto execute_then_close(Body body)
      -> Task<typename std::invoke_result_t<Body&, Inbound&, Outbound&>::value_type> {
    using R = typename std::invoke_result_t<Body&, Inbound&, Outbound&>::value_type;
    std::exception_ptr error;
    if constexpr (std::is_void_v<R>) {
      try {
        co_await body(inbound_, outbound_);
      } catch (...) {
        error = std::current_exception();
      }
      co_await close_keeping(error);
      if (error) std::rethrow_exception(error);
    } else {
      std::optional<R> result;
      try {
        result.emplace(co_await body(inbound_, outbound_));
      } catch (...) {
        error = std::current_exception();
      }
      co_await close_keeping(error);
      if (error) std::rethrow_exception(error);
      co_return std::move(*result);
    }
  }

 private:
  AsyncChannel(std::shared_ptr<detail::AsyncChannelHandler> handler,
               std::shared_ptr<Channel> owner) noexcept
      : handler_(std::move(handler)),
        owner_(std::move(owner)),
        inbound_(handler_.get()),
        outbound_(handler_.get()) {}

  /// Closes; a close failure is kept in error unless it already holds the body's.
  Task<void> close_keeping(std::exception_ptr& error) {
    try {
      co_await close();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }

  void reset() noexcept {
    if (!handler_) return;
    auto handler = std::move(handler_);
    auto owner = std::move(owner_);
    try {
      if (owner) {
        EventExecutor& loop = owner->event_loop();
        if (detail::in_executor(loop)) {
          handler->detach();
        } else {
          loop.execute([h = std::move(handler), o = std::move(owner)] { h->detach(); });
        }
      } else if (handler->attached()) {
        /// A channel not owned by a shared_ptr is used (and dropped) on its loop by its owner.
        handler->detach();
      }
    } catch (...) {
      /// The loop is gone or refused the work: nothing is left to detach from.
    }
  }

  std::shared_ptr<detail::AsyncChannelHandler> handler_;
  std::shared_ptr<Channel> owner_;
  Inbound inbound_;
  Outbound outbound_;
};

}  // namespace trellis
