// Channel: a connection (or any message endpoint) bound to one event loop for its whole life,
// with its pipeline, config, attributes and close future. Channel::Unsafe is the internal side
// the pipeline's head drives (register, bind, connect, write, flush, close...); a transport (or
// EmbeddedChannel) implements the protected do_* hooks it calls.
#pragma once

#include <memory>
#include <optional>

#include <trellis/pipeline/attribute_map.hpp>
#include <trellis/pipeline/channel_config.hpp>
#include <trellis/pipeline/channel_id.hpp>
#include <trellis/pipeline/channel_outbound_buffer.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/pipeline/event_executor.hpp>

namespace trellis {

namespace detail {
class PipelineHead;
class PipelineTail;
}  // namespace detail

/// A connection (or any message endpoint) bound to one event loop for its whole life, with its
/// pipeline, config, attributes and close future. Abstract: transports (SocketChannel,
/// ServerSocketChannel, DatagramChannel) and EmbeddedChannel derive from it and implement the
/// protected `do_*` hooks.
///
/// Threading: the accessors and the outbound operations (`write`, `flush`, `close`, ...) may be
/// called from any thread; operations started off the channel's event loop are posted to it.
/// Everything the pipeline does runs on that loop.
///
/// Errors: an operation on a closed channel fails with ClosedChannelError. An operation without
/// a promise reports its failure as `exception_caught` in the pipeline; with a promise, the
/// failure goes to the promise only.
class Channel {
 public:
  /// The transport-facing operations. Only the pipeline's head context (and transports) call
  /// them, always on the channel's event loop. They implement what every transport shares
  /// (promise handling, the outbound buffer, the close sequence) around the `do_*` hooks.
  /// Application code uses the Channel's own operations instead.
  class Unsafe {
   public:
    Unsafe(const Unsafe&) = delete;
    Unsafe& operator=(const Unsafe&) = delete;

    /// Registers the channel with its loop: fires `channel_registered`, then `channel_active`
    /// when the channel is already active. Throws IllegalStateError when already registered or
    /// off the channel's loop.
    void register_channel();
    /// Binds with `do_bind`; fires `channel_active` (from a task queued on the loop) when the
    /// channel became active. Fails with ClosedChannelError once closed, or with what `do_bind`
    /// threw.
    void bind(const SocketAddress& local, ChannelPromise promise);
    /// Connects with `do_connect`, which completes the promise. Fails with ClosedChannelError
    /// once closed, or with what `do_connect` threw.
    void connect(const SocketAddress& remote, const std::optional<SocketAddress>& local,
                 ChannelPromise promise);
    /// Disconnects with `do_disconnect` when the channel supports it (then fires
    /// `channel_inactive` from a task queued on the loop), else closes.
    void disconnect(ChannelPromise promise);
    /// Closes once (later calls just complete their promise): do_close, completes the close
    /// future, fails queued writes with ClosedChannelError, then fires channel_inactive (if it
    /// was active) and channel_unregistered from a task queued on the loop. The promise fails
    /// with what `do_close` threw (the channel counts as closed all the same).
    void close(ChannelPromise promise);
    /// Starts reading with `do_begin_read` when the channel is active. If that throws, the
    /// exception is fired into the pipeline and the channel closed.
    void begin_read();
    /// Queues `msg` in the outbound buffer, through `filter_outbound_message` (fails with
    /// ClosedChannelError once closed, or with what the filter threw).
    void write(Message&& msg, ChannelPromise promise);
    /// Marks queued writes flushed and lets the transport write them (`do_write`).
    void flush();
    /// Lets the transport write what is already flushed (`do_write`) without flushing more: a
    /// transport calls it when the socket became writable again. Flushed writes fail with
    /// ClosedChannelError while the channel is not active; when `do_write` throws they fail with
    /// its exception, and the channel closes if `auto_close` is on.
    void write_flushed();
    /// Shuts the output down with `do_shutdown_output`, completing the promise, or failing it
    /// with what that threw.
    void shutdown_output(ChannelPromise promise);
    /// The outbound buffer, nullptr once closed.
    ChannelOutboundBuffer* outbound_buffer() noexcept { return outbound_buffer_.get(); }
    /// Fails `promise`, or fires the error into the pipeline when the promise is void.
    void fail(ChannelPromise& promise, std::exception_ptr error);
    /// For `do_write`: the write failed with `error`. When `do_write` returns, it counts as if it
    /// had thrown `error` (without the cost of a throw, paid per connection a peer resets).
    void set_write_error(std::exception_ptr error) noexcept { write_error_ = std::move(error); }
    /// The error `set_write_error` left for the `do_write` in progress, if any.
    bool has_write_error() const noexcept { return write_error_ != nullptr; }

   private:
    friend class Channel;
    explicit Unsafe(Channel& channel) : channel_(channel) {}
    void deregister();
    // Runs fn on the loop after the current callback (inline when the loop refuses work).
    template <class Fn>
    void invoke_later(Fn&& fn);

    Channel& channel_;
    std::unique_ptr<ChannelOutboundBuffer> outbound_buffer_;
    // A close during a flush (a write's promise listener closing the channel) must not free the
    // buffer the transport is still draining: it is parked here until the flush returns.
    std::unique_ptr<ChannelOutboundBuffer> retired_outbound_buffer_;
    std::exception_ptr write_error_;  // see set_write_error
    bool in_flush_ = false;
    bool close_initiated_ = false;
  };

  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  /// A closed channel must outlive the tasks its close queued: destroy it after its
  /// `channel_unregistered`.
  virtual ~Channel();

  /// The channel's process-unique identity.
  const ChannelId& id() const noexcept { return id_; }
  /// The channel's pipeline of handlers.
  ChannelPipeline& pipeline() noexcept { return pipeline_; }
  /// The event loop the channel is bound to for its whole life.
  EventExecutor& event_loop() const noexcept { return *loop_; }
  /// The channel's settings (changeable from any thread).
  ChannelConfig& config() noexcept { return config_; }
  /// The channel's settings, read-only.
  const ChannelConfig& config() const noexcept { return config_; }
  /// The channel that accepted this one (a server channel), or nullptr.
  Channel* parent() const noexcept { return parent_; }
  /// The transport-facing operations; for the pipeline's head and transports, on the loop.
  Unsafe& unsafe() noexcept { return unsafe_; }

  /// True until the channel is closed.
  virtual bool is_open() const = 0;
  /// True while the channel is open and connected (or bound, for a server or datagram channel).
  virtual bool is_active() const = 0;
  /// True while the channel is registered with its event loop.
  bool is_registered() const noexcept { return registered_; }
  /// False while the outbound buffer holds more than the high water mark (or the transport or a
  /// test made it unwritable), and once closed.
  bool is_writable() const noexcept;
  /// How many more bytes may be queued before the channel turns unwritable (0 when unwritable
  /// or closed).
  std::size_t bytes_before_unwritable() const noexcept;
  /// How many queued bytes must be written before the channel turns writable again (0 when
  /// writable or closed).
  std::size_t bytes_before_writable() const noexcept;
  /// The local address, or nullopt when not bound (or closed).
  virtual std::optional<SocketAddress> local_address() const = 0;
  /// The peer's address, or nullopt when not connected (or closed).
  virtual std::optional<SocketAddress> remote_address() const = 0;
  /// Completes (successfully) when the channel has closed. Its listeners run on the channel's
  /// event loop.
  Future<void> close_future() const { return close_promise_.future(); }

  /// Half-close: shuts the output down (a TCP FIN) while the input stays open, from any thread.
  /// An outbound operation through the whole pipeline (ChannelOutboundHandler::shutdown_output),
  /// so a handler can send a last word first (TLS's close_notify). Flushed writes not yet sent
  /// and later writes fail with ClosedChannelError; the pipeline sees ChannelOutputShutdownEvent.
  /// Channels that cannot half-close (the default) fail the future with IllegalStateError, so a
  /// caller can fall back to close().
  virtual Future<void> shutdown_output();
  /// True once the output was shut down (shutdown_output(), or a failed write on a half-closed
  /// socket). Always false for channels that cannot half-close.
  virtual bool is_output_shutdown() const noexcept { return false; }

  /// A shared owner of this channel, for what must keep it alive beyond its registration (a task
  /// spawned by a handler, an AsyncChannel). Empty for a channel that is not owned by a shared_ptr
  /// (an EmbeddedChannel owned by a test): its owner keeps it alive.
  virtual std::shared_ptr<Channel> shared_owner() noexcept { return {}; }
  /// shared_owner(), for code that holds a `Channel&` (a handler's `ctx.channel()`) and must
  /// share it: every channel the framework makes is owned by a shared_ptr (SocketChannel,
  /// ServerSocketChannel, DatagramChannel, EmbeddedChannel::create). Throws IllegalStateError
  /// when the channel has no shared owner (an EmbeddedChannel constructed on a test's stack).
  /// The transports' own shared_from_this() (enable_shared_from_this) hides this one and returns
  /// their type.
  std::shared_ptr<Channel> shared_from_this();

  /// The channel's typed attributes (thread-safe).
  AttributeMap& attributes() noexcept { return attributes_; }
  /// The attribute of `key`, or nullptr when it is not set (see AttributeMap::get).
  template <class T>
  T* attr(const AttributeKey<T>& key) const {
    return attributes_.get(key);
  }
  /// Sets (or replaces) the attribute of `key` to a `T` built from `args`, and returns it.
  template <class T, class... Args>
  T& set_attr(const AttributeKey<T>& key, Args&&... args) {
    return attributes_.set(key, std::forward<Args>(args)...);
  }

  /// @name Outbound operations
  /// Outbound operations through the whole pipeline (from the tail), from any thread; see
  /// ChannelPipeline's operations. Without a promise a failure is fired into the pipeline as
  /// `exception_caught`; with one, it fails the promise only.
  ///@{
  /// Binds the channel to `local`.
  void bind(const SocketAddress& local, ChannelPromise promise = {});
  /// Connects the channel to `remote`.
  void connect(const SocketAddress& remote, ChannelPromise promise = {});
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
  ///@}
  /// A promise whose listeners run on this channel's event loop.
  ChannelPromise new_promise() { return ChannelPromise::make(loop_); }

 protected:
  /// A channel on `loop`, accepted by `parent` (a server channel) when given, identified by `id`.
  Channel(EventExecutor& loop, Channel* parent = nullptr, ChannelId id = ChannelId::next());

  // --- Transport hooks, called by Unsafe on the event loop. -------------------------------
  /// Transport hook: the channel is being registered with its loop. Default: nothing.
  virtual void do_register() {}
  /// Transport hook: binds to `local`; throws to fail the bind.
  virtual void do_bind(const SocketAddress& local) = 0;
  /// Transport hook: starts connecting and completes `promise` when done (the transport fires
  /// `channel_active`).
  virtual void do_connect(const SocketAddress& remote, const std::optional<SocketAddress>& local,
                          ChannelPromise promise) = 0;
  /// Transport hook: only called when supports_disconnect(); otherwise disconnect() closes.
  virtual void do_disconnect() {}
  /// Whether the transport can disconnect without closing (a datagram channel). Default: false.
  virtual bool supports_disconnect() const noexcept { return false; }
  /// Transport hook: closes the underlying resource (called once); a throw fails the close's
  /// promise, but the channel counts as closed.
  virtual void do_close() = 0;
  /// Transport hook: shuts the output down (called by the pipeline's head, on the loop); throws
  /// to fail the operation. Default: IllegalStateError (the channel cannot half-close).
  virtual void do_shutdown_output();
  /// Transport hook: the closed channel leaves its loop. Default: nothing; a throw is logged.
  virtual void do_deregister() {}
  /// Transport hook: starts (or continues) reading; a throw is fired into the pipeline and
  /// closes the channel.
  virtual void do_begin_read() = 0;
  /// Transport hook: writes what it can of the flushed messages of `out`, removing each written
  /// one. A throw (or an error left with Unsafe::set_write_error) fails the flushed writes (and
  /// closes the channel when `auto_close` is on).
  virtual void do_write(ChannelOutboundBuffer& out) = 0;
  /// Transport hook: converts or rejects a message on its way into the outbound buffer (a socket
  /// accepts bytes only). Throwing fails the write. Default: the message unchanged.
  virtual Message filter_outbound_message(Message&& msg) { return std::move(msg); }
  /// Transport hook: `auto_read` was switched off (a transport stops waiting for readability).
  virtual void on_auto_read_cleared() {}

  // --- What reached the tail unhandled. Defaults log through spdlog and drop. ----------------
  /// A message no handler consumed. Default: logged (debug level) and dropped.
  virtual void on_unhandled_inbound_message(Message&& msg);
  /// An exception no handler dealt with. Default: logged (warn level) and dropped.
  virtual void on_unhandled_inbound_exception(std::exception_ptr error);
  /// A user event no handler consumed. Default: logged (debug level) and dropped.
  virtual void on_unhandled_user_event(Message&& event);
  /// A `channel_read_complete` that reached the tail. Default: nothing.
  virtual void on_unhandled_read_complete() {}

 private:
  friend class ChannelConfig;
  friend class detail::PipelineTail;

  ChannelId id_;
  Channel* parent_;
  EventExecutor* loop_;
  ChannelConfig config_;
  Unsafe unsafe_;
  ChannelPipeline pipeline_;
  mutable AttributeMap attributes_;
  Promise<void> close_promise_;
  bool registered_ = false;
};

}  // namespace trellis
