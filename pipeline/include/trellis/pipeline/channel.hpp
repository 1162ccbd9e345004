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

class Channel {
 public:
  // The transport-facing operations. Only the pipeline's head context (and transports) call
  // them, always on the channel's event loop. They implement what every transport shares
  // (promise handling, the outbound buffer, the close sequence) around the do_* hooks.
  class Unsafe {
   public:
    Unsafe(const Unsafe&) = delete;
    Unsafe& operator=(const Unsafe&) = delete;

    // Registers the channel with its loop: fires channel_registered, then channel_active when
    // the channel is already active.
    void register_channel();
    void bind(const SocketAddress& local, ChannelPromise promise);
    void connect(const SocketAddress& remote, const std::optional<SocketAddress>& local,
                 ChannelPromise promise);
    void disconnect(ChannelPromise promise);
    // Closes once (later calls just complete their promise): do_close, completes the close
    // future, fails queued writes with ClosedChannelError, then fires channel_inactive (if it
    // was active) and channel_unregistered from a task queued on the loop.
    void close(ChannelPromise promise);
    void begin_read();
    // Queues msg in the outbound buffer (fails with ClosedChannelError once closed).
    void write(Message&& msg, ChannelPromise promise);
    // Marks queued writes flushed and lets the transport write them (do_write).
    void flush();
    // Lets the transport write what is already flushed (do_write) without flushing more: a
    // transport calls it when the socket became writable again.
    void write_flushed();
    // The outbound buffer, nullptr once closed.
    ChannelOutboundBuffer* outbound_buffer() noexcept { return outbound_buffer_.get(); }
    // Fails promise, or fires the error into the pipeline when the promise is void.
    void fail(ChannelPromise& promise, std::exception_ptr error);

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
    bool in_flush_ = false;
    bool close_initiated_ = false;
  };

  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  virtual ~Channel();

  const ChannelId& id() const noexcept { return id_; }
  ChannelPipeline& pipeline() noexcept { return pipeline_; }
  EventExecutor& event_loop() const noexcept { return *loop_; }
  ChannelConfig& config() noexcept { return config_; }
  const ChannelConfig& config() const noexcept { return config_; }
  // The channel that accepted this one (a server channel), or nullptr.
  Channel* parent() const noexcept { return parent_; }
  Unsafe& unsafe() noexcept { return unsafe_; }

  virtual bool is_open() const = 0;
  virtual bool is_active() const = 0;
  bool is_registered() const noexcept { return registered_; }
  // False while the outbound buffer holds more than the high water mark (or the transport or a
  // test made it unwritable), and once closed.
  bool is_writable() const noexcept;
  std::size_t bytes_before_unwritable() const noexcept;
  std::size_t bytes_before_writable() const noexcept;
  virtual std::optional<SocketAddress> local_address() const = 0;
  virtual std::optional<SocketAddress> remote_address() const = 0;
  // Completes (successfully) when the channel has closed.
  Future<void> close_future() const { return close_promise_.future(); }

  // Half-close: shuts the output down (a TCP FIN) while the input stays open, from any thread.
  // Flushed writes not yet sent and later writes fail with ClosedChannelError; the pipeline sees
  // ChannelOutputShutdownEvent. Channels that cannot half-close (the default) fail the future
  // with IllegalStateError, so a caller can fall back to close().
  virtual Future<void> shutdown_output();
  virtual bool is_output_shutdown() const noexcept { return false; }

  // A shared owner of this channel, for what must keep it alive beyond its registration (a task
  // spawned by a handler, an AsyncChannel). Empty for a channel that is not owned by a shared_ptr
  // (an EmbeddedChannel owned by a test): its owner keeps it alive.
  virtual std::shared_ptr<Channel> shared_owner() noexcept { return {}; }
  // shared_owner(), for code that holds a Channel& (a handler's ctx.channel()) and must share
  // it: every channel the framework makes is owned by a shared_ptr (SocketChannel,
  // ServerSocketChannel, DatagramChannel, EmbeddedChannel::create). Throws IllegalStateError
  // when the channel has no shared owner (an EmbeddedChannel constructed on a test's stack).
  // The transports' own shared_from_this() (enable_shared_from_this) hides this one and returns
  // their type.
  std::shared_ptr<Channel> shared_from_this();

  AttributeMap& attributes() noexcept { return attributes_; }
  template <class T>
  T* attr(const AttributeKey<T>& key) const {
    return attributes_.get(key);
  }
  template <class T, class... Args>
  T& set_attr(const AttributeKey<T>& key, Args&&... args) {
    return attributes_.set(key, std::forward<Args>(args)...);
  }

  // Outbound operations through the whole pipeline (from the tail), from any thread.
  void bind(const SocketAddress& local, ChannelPromise promise = {});
  void connect(const SocketAddress& remote, ChannelPromise promise = {});
  void disconnect(ChannelPromise promise = {});
  void close(ChannelPromise promise = {});
  void read();
  void write(Message&& msg, ChannelPromise promise = {});
  void flush();
  void write_and_flush(Message&& msg, ChannelPromise promise = {});
  // A promise whose listeners run on this channel's event loop.
  ChannelPromise new_promise() { return ChannelPromise::make(loop_); }

 protected:
  Channel(EventExecutor& loop, Channel* parent = nullptr, ChannelId id = ChannelId::next());

  // --- Transport hooks, called by Unsafe on the event loop. -------------------------------
  virtual void do_register() {}
  virtual void do_bind(const SocketAddress& local) = 0;
  // Starts connecting and completes promise when done (the transport fires channel_active).
  virtual void do_connect(const SocketAddress& remote, const std::optional<SocketAddress>& local,
                          ChannelPromise promise) = 0;
  // Only called when supports_disconnect(); otherwise disconnect() closes.
  virtual void do_disconnect() {}
  virtual bool supports_disconnect() const noexcept { return false; }
  virtual void do_close() = 0;
  virtual void do_deregister() {}
  virtual void do_begin_read() = 0;
  // Writes what it can of the flushed messages of out, removing each written one.
  virtual void do_write(ChannelOutboundBuffer& out) = 0;
  // Converts or rejects a message on its way into the outbound buffer (a socket accepts bytes
  // only). Throwing fails the write.
  virtual Message filter_outbound_message(Message&& msg) { return std::move(msg); }
  // auto_read was switched off (a transport stops waiting for readability).
  virtual void on_auto_read_cleared() {}

  // --- What reached the tail unhandled. Defaults log through spdlog and drop. ----------------
  virtual void on_unhandled_inbound_message(Message&& msg);
  virtual void on_unhandled_inbound_exception(std::exception_ptr error);
  virtual void on_unhandled_user_event(Message&& event);
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
