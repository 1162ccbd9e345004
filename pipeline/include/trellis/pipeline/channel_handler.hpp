// The handler interfaces of a pipeline: ChannelHandler (life cycle and exceptions),
// ChannelInboundHandler (events from the transport towards the application),
// ChannelOutboundHandler (operations from the application towards the transport) and
// ChannelDuplexHandler (both). Every default passes the event on unchanged, so a handler
// overrides only what it cares about.
#pragma once

#include <atomic>
#include <exception>
#include <optional>

#include <trellis/pipeline/channel_promise.hpp>
#include <trellis/pipeline/message.hpp>
#include <trellis/pipeline/socket_address.hpp>

namespace trellis {

class ChannelHandlerContext;
class ChannelInboundHandler;
class ChannelOutboundHandler;

/// The base of every handler in a ChannelPipeline: its life cycle in the pipeline and the
/// exceptions that reach it. Derive from ChannelInboundHandler, ChannelOutboundHandler or
/// ChannelDuplexHandler rather than from this class directly.
///
/// Threading: the pipeline calls every callback of a handler on its channel's event loop (before
/// the channel is registered, `handler_added` and `handler_removed` run on the thread that edits
/// the pipeline), one at a time per channel. A handler that is not sharable therefore needs no
/// locking for its per-channel state.
///
/// Errors: an exception a callback throws does not escape to the event loop. The pipeline passes
/// it to `exception_caught` of the next inbound handler (for an outbound operation with a
/// promise, it fails the promise instead).
class ChannelHandler {
 public:
  ChannelHandler() = default;
  ChannelHandler(const ChannelHandler&) = delete;
  ChannelHandler& operator=(const ChannelHandler&) = delete;
  virtual ~ChannelHandler() = default;

  /// Called once the handler is in a pipeline, before `add_*` (or `replace`) returns; `ctx` is
  /// its place there. Default: nothing. If it throws, the handler is removed again and a
  /// ChannelPipelineError is fired into the pipeline.
  virtual void handler_added(ChannelHandlerContext& ctx);
  /// Called after the handler left the pipeline (removed, replaced, or every handler of a closed
  /// channel when it is unregistered): free what the handler holds for this channel here.
  /// Default: nothing. An exception it throws is fired as a ChannelPipelineError.
  virtual void handler_removed(ChannelHandlerContext& ctx);
  /// An exception thrown by a handler before this one (or fired with `fire_exception_caught`).
  /// Default: pass it on with `ctx.fire_exception_caught(error)`; what reaches the tail is
  /// logged at warn level. An exception thrown from here is logged and dropped.
  virtual void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error);

  /// A sharable handler may sit in several pipelines at once (it keeps no per-channel state, or
  /// guards it). Adding a non-sharable handler to a second pipeline is refused with
  /// ChannelPipelineError. Default: false.
  virtual bool is_sharable() const noexcept { return false; }

  /// @name Sides
  /// Which sides the handler takes part in; the pipeline asks once, when the handler is added.
  /// ChannelInboundHandler and ChannelOutboundHandler answer for themselves: do not override
  /// these.
  ///@{
  /// This handler as an inbound handler, or nullptr when it handles no inbound events.
  virtual ChannelInboundHandler* as_inbound() noexcept { return nullptr; }
  /// This handler as an outbound handler, or nullptr when it handles no outbound operations.
  virtual ChannelOutboundHandler* as_outbound() noexcept { return nullptr; }
  ///@}

 private:
  friend class ChannelPipeline;
  std::atomic<bool> added_{false};
};

/// A handler of inbound events: those flowing from the head (transport) to the tail
/// (application end) of the pipeline. Each callback's default passes the event on to the next
/// inbound handler unchanged (`ctx.fire_...`), so a handler overrides only what it cares about;
/// an override that does not pass the event on stops it there.
///
/// Threading: called on the channel's event loop. Errors: an exception thrown from a callback
/// goes to `exception_caught` of the next inbound handler.
class ChannelInboundHandler : public virtual ChannelHandler {
 public:
  /// The channel was registered with its event loop (the first event a channel fires).
  virtual void channel_registered(ChannelHandlerContext& ctx);
  /// The channel was deregistered from its loop: the last event of a closed channel. After it,
  /// every handler of a closed channel is removed (`handler_removed`).
  virtual void channel_unregistered(ChannelHandlerContext& ctx);
  /// The channel became active: connected (or bound, for a server or datagram channel). With
  /// `auto_read` on, the head starts reading after this event.
  virtual void channel_active(ChannelHandlerContext& ctx);
  /// The channel is no longer active (closed or disconnected). Tasks started with
  /// ChannelHandlerContext::spawn are cancelled after every handler saw this event.
  virtual void channel_inactive(ChannelHandlerContext& ctx);
  /// A message was read (a ByteBuf from a socket, or what a decoder before this handler made of
  /// it). The handler owns `msg`: pass it on with `ctx.fire_channel_read(std::move(msg))`, or
  /// consume it. What reaches the tail is logged (debug level) and dropped.
  virtual void channel_read(ChannelHandlerContext& ctx, Message msg);
  /// The end of a batch of `channel_read`s (one wake-up of the transport, at most
  /// `max_messages_per_read` messages): a good place to flush replies. With `auto_read` on, the
  /// head asks for the next batch after this event.
  virtual void channel_read_complete(ChannelHandlerContext& ctx);
  /// An event that is not a message: fired by a handler with `fire_user_event_triggered` (an
  /// IdleStateEvent) or by the framework (ChannelInputShutdownEvent and the other events of
  /// channel_events.hpp). Test its type with `event.is<T>()` or `event.try_get<T>()`.
  virtual void user_event_triggered(ChannelHandlerContext& ctx, Message event);
  /// The channel's writability (Channel::is_writable) changed: the outbound buffer went above
  /// the high water mark, or back below the low one. A producer stops writing while it is
  /// unwritable and resumes when this fires again.
  virtual void channel_writability_changed(ChannelHandlerContext& ctx);

  /// Returns this handler: it handles inbound events.
  ChannelInboundHandler* as_inbound() noexcept override { return this; }
};

/// A handler of outbound operations: those flowing from the tail towards the head, which hands
/// them to the transport. Each callback's default passes the operation on to the previous
/// outbound handler unchanged (`ctx.write(...)`, `ctx.close(...)`, ...), so a handler overrides
/// only what it cares about.
///
/// A handler that completes, drops or replaces an operation is responsible for its promise:
/// complete it (`try_set_value`, `try_set_exception`) or hand it on. The promise may be the
/// void ChannelPromise (the caller passed none); completing it then does nothing.
///
/// Threading: called on the channel's event loop, also when the operation was started on another
/// thread (it is posted there). Errors: an exception thrown from a callback fails the
/// operation's promise, or, without one, goes to `exception_caught` of the next inbound handler.
class ChannelOutboundHandler : public virtual ChannelHandler {
 public:
  /// Binds the channel to the local address `local`. Default: `ctx.bind(local, promise)`.
  virtual void bind(ChannelHandlerContext& ctx, const SocketAddress& local, ChannelPromise promise);
  /// Connects the channel to `remote`, from `local` when given. The promise completes when the
  /// connection is established (or failed). Default: `ctx.connect(remote, local, promise)`.
  virtual void connect(ChannelHandlerContext& ctx, const SocketAddress& remote,
                       const std::optional<SocketAddress>& local, ChannelPromise promise);
  /// Disconnects the channel from its peer; a channel that cannot disconnect (TCP) closes
  /// instead. Default: `ctx.disconnect(promise)`.
  virtual void disconnect(ChannelHandlerContext& ctx, ChannelPromise promise);
  /// Closes the channel. The promise completes when the channel has closed; queued writes fail
  /// with ClosedChannelError. Default: `ctx.close(promise)`.
  virtual void close(ChannelHandlerContext& ctx, ChannelPromise promise);
  /// Asks the transport for more inbound data (what `auto_read` does by itself; a handler that
  /// paces reading holds this back). Default: `ctx.read()`.
  virtual void read(ChannelHandlerContext& ctx);
  /// Writes `msg`: queued in the outbound buffer, sent at the next `flush`. The promise completes
  /// when the transport has written all of it, or fails (ClosedChannelError once closed). An
  /// encoder replaces `msg` by its encoding and passes the promise on. Default:
  /// `ctx.write(std::move(msg), promise)`.
  virtual void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise);
  /// Lets the transport send what was written so far. Default: `ctx.flush()`.
  virtual void flush(ChannelHandlerContext& ctx);
  /// Half-close: shuts the channel's output down (a TCP FIN) while its input stays open; the
  /// head hands it to the transport. A handler that has a last word to send first (TLS's
  /// close_notify) writes and flushes it, and passes the operation on once it was written. The
  /// promise completes when the output is shut down, or fails (IllegalStateError for a channel
  /// that cannot half-close). Default: `ctx.shutdown_output(promise)`.
  virtual void shutdown_output(ChannelHandlerContext& ctx, ChannelPromise promise);

  /// Returns this handler: it handles outbound operations.
  ChannelOutboundHandler* as_outbound() noexcept override { return this; }
};

/// A handler of both directions (codecs, idle detectors, ...): every inbound event and outbound
/// operation it does not override passes on unchanged.
class ChannelDuplexHandler : public ChannelInboundHandler, public ChannelOutboundHandler {};

}  // namespace trellis
