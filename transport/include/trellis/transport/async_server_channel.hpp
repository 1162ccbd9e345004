// AsyncServerChannel<In, Out>: a listening channel seen from coroutines (ServerBootstrap::
// bind_async): `co_await server.accept()` yields each accepted connection as an AsyncChannel.
#pragma once

#include <chrono>
#include <coroutine>
#include <memory>
#include <optional>
#include <utility>

#include <trellis/pipeline/async_channel.hpp>
#include <trellis/pipeline/awaitables.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/transport/detail/async_accept_handler.hpp>

namespace trellis {

class ServerBootstrap;

namespace detail {

// co_await server.accept(): the next accepted child (nullopt once the server channel closed). A
// cancellation point while it waits.
template <class In, class Out>
class AcceptAwaiter final : private CancelHook {
 public:
  explicit AcceptAwaiter(AsyncAcceptHandler& handler) noexcept : handler_(&handler) {}
  AcceptAwaiter(const AcceptAwaiter&) = delete;
  AcceptAwaiter& operator=(const AcceptAwaiter&) = delete;

  bool await_ready() const noexcept { return handler_->has_event(); }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    ctx_ = task_context_of(h);
    if (ctx_ != nullptr && ctx_->cancel_requested) {
      cancelled_ = true;
      return false;
    }
    handler_->set_waiter(h, awaiting_executor(h), refused_);
    handle_ = h;
    if (ctx_ != nullptr) ctx_->cancel_hook = this;
    return true;
  }
  std::optional<AsyncChannel<In, Out>> await_resume() {
    if (ctx_ != nullptr && ctx_->cancel_hook == static_cast<CancelHook*>(this)) {
      ctx_->cancel_hook = nullptr;
    }
    if (cancelled_) throw_cancelled();
    if (refused_) throw_resumption_refused();
    std::optional<Message> child = handler_->take();
    if (!child) return std::nullopt;
    return child->template take<AsyncChannel<In, Out>>();
  }

 private:
  void on_cancel() noexcept override {
    handler_->clear_waiter();
    cancelled_ = true;
    handle_.resume();
  }

  AsyncAcceptHandler* handler_;
  TaskContext* ctx_ = nullptr;
  std::coroutine_handle<> handle_;
  bool cancelled_ = false;
  bool refused_ = false;  // set before the resumption if the executor refused it
};

// What bind_async hands from the bootstrap to AsyncServerChannel.
struct AsyncServerBinding {
  std::shared_ptr<Channel> server;
  std::shared_ptr<AsyncAcceptHandler> acceptor;
};

}  // namespace detail

/// Made by ServerBootstrap::bind_async<In, Out>. Each accepted channel gets its pipeline from the
/// bootstrap's child_handler first; then, on the child's own event loop, an AsyncChannel<In, Out>
/// is put at the tail (reading starts only then: children are created with auto_read off), and
/// the child is handed to accept(), in accept order. accept() runs on the server channel's loop;
/// use each child from its own loop: `child->event_loop().spawn(serve(std::move(*child)))`.
template <class In, class Out>
class AsyncServerChannel {
 public:
  /// Takes over o's server (o is left empty).
  AsyncServerChannel(AsyncServerChannel&&) noexcept = default;
  /// Closes this server as the destructor does, then takes over o's.
  AsyncServerChannel& operator=(AsyncServerChannel&& o) noexcept {
    if (this != &o) {
      reset();
      binding_ = std::move(o.binding_);
    }
    return *this;
  }
  AsyncServerChannel(const AsyncServerChannel&) = delete;
  AsyncServerChannel& operator=(const AsyncServerChannel&) = delete;
  /// Closes the listening channel and the accepted children nobody took; off the server's loop
  /// it waits (at most 5 s) until that is done.
  ~AsyncServerChannel() { reset(); }

  /// The next accepted channel, set up and wrapped; std::nullopt once the server channel closed
  /// (the children accepted before are handed out first). On the server channel's event loop,
  /// one task at a time (IllegalStateError otherwise). A cancellation point.
  detail::AcceptAwaiter<In, Out> accept() {
    binding_.acceptor->check_on_loop("accept()");
    return detail::AcceptAwaiter<In, Out>(*binding_.acceptor);
  }

  /// Closes the listening channel (from any thread); accept() yields nullopt after the children
  /// already accepted. The future completes when it is closed.
  Future<void> close() {
    Channel& ch = *binding_.server;
    ChannelPromise promise = ch.new_promise();
    Future<void> done = promise.future();
    ch.close(std::move(promise));
    return done;
  }
  /// The bound address (with the port the system chose for port 0).
  std::optional<SocketAddress> local_address() const { return binding_.server->local_address(); }
  /// The listening channel.
  Channel& channel() const noexcept { return *binding_.server; }
  /// The loop accept() must be awaited on.
  EventExecutor& event_loop() const noexcept { return binding_.server->event_loop(); }
  /// Accepted children waiting for accept() (snapshot, from any thread).
  std::size_t buffered() const noexcept { return binding_.acceptor->buffered(); }
  /// True while the server has stopped accepting because high_watermark children wait.
  bool accepting_paused() const noexcept { return binding_.acceptor->accepting_paused(); }

 private:
  friend class ServerBootstrap;
  explicit AsyncServerChannel(detail::AsyncServerBinding binding) noexcept
      : binding_(std::move(binding)) {}

  void reset() noexcept {
    if (!binding_.acceptor) return;
    auto binding = std::move(binding_);
    binding_ = {};
    EventExecutor& loop = binding.server->event_loop();
    if (detail::in_executor(loop)) {
      binding.acceptor->abandon();
      return;
    }
    try {
      Future<void> done = loop.submit([b = std::move(binding)] { b.acceptor->abandon(); });
      // Waits (bounded) so that the children nobody took are dropped while their loops live:
      // the caller may destroy the child group next.
      done.wait_for(std::chrono::seconds(5));
    } catch (...) {
      // The loop is shut down: the server channel closed with it.
    }
  }

  detail::AsyncServerBinding binding_;
};

}  // namespace trellis
