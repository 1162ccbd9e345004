// EmbeddedChannel: a channel without a socket, for unit tests of handlers and codecs. Messages
// written inbound go through the pipeline and are collected at its tail; messages written
// outbound come out of the head into a queue. Time is the channel's own EmbeddedEventLoop,
// which the test freezes and advances. Unlike Netty's, it honours auto_read and can play a slow
// peer (an outbound byte budget, or set_writable(false)) to test back-pressure.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/detail/ring_buffer.hpp>
#include <trellis/pipeline/scheduled_future.hpp>
#include <trellis/testing/embedded_event_loop.hpp>

namespace trellis {

namespace detail {
// Constructed before the Channel base, so the channel can be built on this loop.
struct EmbeddedLoopHolder {
  EmbeddedEventLoop embedded_loop_;
};
}  // namespace detail

/// Anything that converts to a handler pointer (std::shared_ptr<MyHandler>, ...).
template <class H>
concept HandlerPtr = std::convertible_to<H, std::shared_ptr<ChannelHandler>>;

/// A channel without a socket, for unit tests of handlers and codecs. Messages written inbound
/// go through the pipeline and are collected at its tail; messages written outbound come out of
/// the head into a queue. Time is the channel's own EmbeddedEventLoop, which the test freezes and
/// advances. It honours auto_read and can play a slow peer (an outbound byte budget, or
/// set_writable(false)) to test back-pressure. Not thread-safe: drive it from the test's thread.
/// The write and flush calls rethrow the first exception that reached the tail or a task threw.
class EmbeddedChannel final : private detail::EmbeddedLoopHolder,
                              public Channel,
                              public std::enable_shared_from_this<EmbeddedChannel> {
 public:
  /// A queue of messages (inbound, outbound, user events); `front()`, `take_front()`, `empty()`,
  /// `size()`.
  using MessageQueue = detail::RingBuffer<Message>;

  /// How the channel starts.
  struct Options {
    /// Register (and activate) at construction, as Netty does; off: call register_channel().
    bool register_channel = true;
    /// The channel's initial ChannelConfig::auto_read.
    bool auto_read = true;
  };

  /// A channel with the given handlers (added in order, then registered and active):
  /// `EmbeddedChannel ch{decoder, handler};`
  template <HandlerPtr... Hs>
  EmbeddedChannel(Hs&&... handlers)  // NOLINT(google-explicit-constructor)
      : EmbeddedChannel(Options{}, std::forward<Hs>(handlers)...) {}

  /// A channel with the given handlers, started as options say.
  template <HandlerPtr... Hs>
  explicit EmbeddedChannel(Options options, Hs&&... handlers)
      : detail::EmbeddedLoopHolder{}, Channel(holder_loop(*this), nullptr, ChannelId::next()) {
    config().set_auto_read(options.auto_read);
    (pipeline().add_last(std::shared_ptr<ChannelHandler>(std::forward<Hs>(handlers))), ...);
    if (options.register_channel) register_channel();
  }

  /// An EmbeddedChannel owned by a shared_ptr, for code that shares a channel from a Channel&
  /// (Channel::shared_from_this(), ChannelGroup::add, a task spawned by a handler). It is
  /// registered once owned, so handlers already see the shared owner in channel_registered and
  /// channel_active. One constructed on the stack has no shared owner.
  template <HandlerPtr... Hs>
  static std::shared_ptr<EmbeddedChannel> create(Hs&&... handlers) {
    return create(Options{}, std::forward<Hs>(handlers)...);
  }
  /// create() with options.
  template <HandlerPtr... Hs>
  static std::shared_ptr<EmbeddedChannel> create(Options options, Hs&&... handlers) {
    const bool register_now = options.register_channel;
    options.register_channel = false;
    auto channel = std::make_shared<EmbeddedChannel>(options, std::forward<Hs>(handlers)...);
    if (register_now) channel->register_channel();
    return channel;
  }

  ~EmbeddedChannel() override;

  /// shared_from_this() gives a shared_ptr<EmbeddedChannel> (Channel::shared_from_this() a
  /// Channel); empty shared_owner() when the channel was not made by create().
  using std::enable_shared_from_this<EmbeddedChannel>::shared_from_this;
  /// Internal: the shared owner made by create(), or null.
  std::shared_ptr<Channel> shared_owner() noexcept override { return weak_from_this().lock(); }

  /// Registers the channel with its loop (fires channel_registered and channel_active).
  void register_channel();

  /// The channel's own loop.
  EmbeddedEventLoop& event_loop() noexcept { return embedded_loop_; }

  // --- inbound ------------------------------------------------------------------------------
  /// Fires each message through the pipeline as channel_read (or, with auto_read off, queues it
  /// until read() is called), then channel_read_complete; runs pending tasks and rethrows the
  /// first exception that reached the tail. True when something can be read inbound.
  template <class... Ms>
  bool write_inbound(Ms&&... msgs) {
    ensure_input_open();
    (write_one_inbound(Message(std::forward<Ms>(msgs))), ...);
    return flush_inbound();
  }
  /// Fires channel_read_complete (delivering messages waiting for read() if one is pending).
  bool flush_inbound();
  /// The next message that reached the tail, as T (T = Message: whatever it is). Empty when
  /// there is none; WrongTypeError naming both types (and the message stays queued) when it
  /// holds another type.
  template <class T = Message>
  std::optional<T> read_inbound() {
    return poll<T>(inbound_messages_, "read_inbound");
  }
  /// The messages that reached the tail, oldest first.
  MessageQueue& inbound_messages() noexcept { return inbound_messages_; }
  /// Inbound messages written while auto_read is off that wait for read().
  MessageQueue& pending_inbound_messages() noexcept { return pending_inbound_; }
  /// User events that reached the tail.
  MessageQueue& user_events() noexcept { return user_events_; }

  // --- outbound -----------------------------------------------------------------------------
  /// Writes each message through the pipeline (from the tail), flushes, runs pending tasks and
  /// rethrows the first exception. True when something can be read outbound.
  template <class... Ms>
  bool write_outbound(Ms&&... msgs) {
    ensure_open();
    (write(Message(std::forward<Ms>(msgs))), ...);
    return flush_outbound();
  }
  /// Flushes, runs pending tasks and rethrows the first exception. True when something can be
  /// read outbound.
  bool flush_outbound();
  /// The next message that came out of the head, as T; fails like read_inbound().
  template <class T = Message>
  std::optional<T> read_outbound() {
    return poll<T>(outbound_messages_, "read_outbound");
  }
  /// The messages that came out of the head, oldest first.
  MessageQueue& outbound_messages() noexcept { return outbound_messages_; }

  // --- slow peer ----------------------------------------------------------------------------
  /// How many more bytes the "peer" accepts; nullopt (the default) is unlimited. Flushed
  /// messages beyond the budget stay in the outbound buffer (a ByteBuf is split at the budget,
  /// like a partial socket write; a FileRegion too, the part written leaving as a region of its
  /// own), so the water marks and writability behave as on a socket.
  void set_outbound_byte_budget(std::optional<std::size_t> budget);
  /// The peer read n more bytes: raises the budget and writes what now fits.
  void add_outbound_byte_budget(std::size_t n);
  /// The bytes the peer still accepts; nullopt: unlimited.
  std::optional<std::size_t> outbound_byte_budget() const noexcept { return budget_; }
  /// false: the peer stops reading. The channel turns unwritable (channel_writability_changed
  /// fires) and flushed writes stay queued; true writes them and restores writability.
  void set_writable(bool writable);

  // --- half-close ---------------------------------------------------------------------------
  /// As a socket's, through the pipeline (ChannelOutboundHandler::shutdown_output): flushed
  /// writes still queued fail, later writes fail, and ChannelOutputShutdownEvent is fired; the
  /// input stays open. Then runs the pending tasks.
  Future<void> shutdown_output() override;
  /// True once shutdown_output() ran.
  bool is_output_shutdown() const noexcept override { return output_shutdown_; }
  /// The peer shut its output down: with allow_half_closure, ChannelInputShutdownEvent (the
  /// decoders' end of input) and later inbound writes are refused; without it, the channel closes
  /// as a socket does at EOF: at once when nothing flushed waits for the peer, else (inbound
  /// writes refused, no event) once the flushed writes are taken, or when
  /// config().eof_drain_timeout() has passed on the channel's clock.
  void shutdown_input();
  /// Whether shutdown_input() half-closes (true) or closes (false, the default).
  void set_allow_half_closure(bool on) noexcept { allow_half_closure_ = on; }
  /// True once shutdown_input() ran.
  bool is_input_shutdown() const noexcept { return input_shutdown_; }

  // --- life cycle ---------------------------------------------------------------------------
  /// Closes the channel: fires channel_inactive then channel_unregistered, fails queued writes
  /// and cancels the loop's scheduled tasks.
  void close();
  /// close(), completing promise when closed.
  void close(ChannelPromise promise);
  /// Closes, rethrows a pending exception, and returns whether messages are left in either
  /// queue (they stay readable).
  bool finish();
  /// Closes and drops every message left; returns whether there were any.
  bool finish_and_release_all();

  // --- loop and time ------------------------------------------------------------------------
  /// Runs queued tasks and the scheduled tasks that are due; exceptions thrown by tasks are
  /// recorded (see check_exception).
  void run_pending_tasks();
  /// Runs the due scheduled tasks; returns the next deadline in nanoseconds, or -1.
  std::int64_t run_scheduled_pending_tasks();
  /// EmbeddedEventLoop::freeze_time() of the channel's loop.
  void freeze_time() { embedded_loop_.freeze_time(); }
  /// EmbeddedEventLoop::unfreeze_time() of the channel's loop.
  void unfreeze_time() { embedded_loop_.unfreeze_time(); }
  /// EmbeddedEventLoop::advance_by() of the channel's loop: runs what falls due.
  void advance_by(std::chrono::nanoseconds d) { embedded_loop_.advance_by(d); }

  // --- exceptions ---------------------------------------------------------------------------
  /// Rethrows the first exception recorded since the last check (an exception that reached the
  /// tail, or one thrown by a task).
  void check_exception();
  /// Every exception recorded so far, in order (checked or not).
  const std::vector<std::exception_ptr>& exceptions() const noexcept { return exceptions_; }

  /// True until closed.
  bool is_open() const override { return state_ != State::kClosed; }
  /// True from registration until closed.
  bool is_active() const override { return state_ == State::kActive; }
  /// The embedded address "embedded", or the address bound.
  std::optional<SocketAddress> local_address() const override { return local_; }
  /// The embedded address "embedded", or the address connected to.
  std::optional<SocketAddress> remote_address() const override { return remote_; }

 protected:
  /// Internal: registration on the channel's loop.
  void do_register() override;
  /// Internal: records local as the local address.
  void do_bind(const SocketAddress& local) override;
  /// Internal: records remote as the remote address and completes the promise.
  void do_connect(const SocketAddress& remote, const std::optional<SocketAddress>& local,
                  ChannelPromise promise) override;
  /// Internal: marks the channel closed and stops a pending drain.
  void do_close() override;
  /// Internal: deregistration.
  void do_deregister() override;
  /// Internal: delivers the inbound messages waiting for read().
  void do_begin_read() override;
  /// Internal: moves the flushed messages the peer accepts to outbound_messages().
  void do_write(ChannelOutboundBuffer& out) override;
  /// Internal: the output shutdown the pipeline's head hands to the channel.
  void do_shutdown_output() override;
  /// Internal: accepts every message type (ClosedChannelError after shutdown_output()).
  Message filter_outbound_message(Message&& msg) override;
  /// As a socket stops waiting for data (and Netty clears a pending read): a read requested while
  /// auto_read was on does not deliver after it went off.
  void on_auto_read_cleared() override { read_pending_ = false; }

  /// Internal: queues a message that reached the tail in inbound_messages().
  void on_unhandled_inbound_message(Message&& msg) override;
  /// Internal: records an exception that reached the tail (see check_exception()).
  void on_unhandled_inbound_exception(std::exception_ptr error) override;
  /// Internal: queues a user event that reached the tail in user_events().
  void on_unhandled_user_event(Message&& event) override;

 private:
  enum class State { kOpen, kActive, kClosed };

  // The holder base is constructed before the Channel base; reaching the loop through the
  // holder (not a member function of this object) is valid during that construction.
  static EmbeddedEventLoop& holder_loop(detail::EmbeddedLoopHolder& holder) noexcept {
    return holder.embedded_loop_;
  }

  void write_one_inbound(Message&& msg);
  void ensure_open();
  void ensure_input_open();
  void record(std::exception_ptr error) { exceptions_.push_back(std::move(error)); }
  [[noreturn]] static void throw_wrong_type(const char* what, std::string_view wanted,
                                            std::string_view held);

  template <class T>
  std::optional<T> poll(MessageQueue& queue, const char* what) {
    if (queue.empty()) return std::nullopt;
    if constexpr (std::is_same_v<T, Message>) {
      return queue.take_front();
    } else {
      if (!queue.front().is<T>()) {
        throw_wrong_type(what, Message::name_of<T>(), queue.front().type_name());
      }
      return queue.take_front().template take<T>();
    }
  }

  State state_ = State::kOpen;
  MessageQueue inbound_messages_;
  MessageQueue outbound_messages_;
  MessageQueue pending_inbound_;
  MessageQueue user_events_;
  std::vector<std::exception_ptr> exceptions_;
  std::size_t checked_ = 0;
  std::optional<std::size_t> budget_;
  bool peer_reading_ = true;
  bool output_shutdown_ = false;
  bool input_shutdown_ = false;
  bool allow_half_closure_ = false;
  bool read_pending_ = false;
  bool delivered_ = false;  // messages fired since the last read_complete (auto_read on)
  bool reading_ = false;
  // From shutdown_input (without half-closure) to the close: flushed writes wait for the peer.
  bool draining_ = false;
  std::optional<ScheduledFuture<void>> drain_timeout_;
  SocketAddress local_ = SocketAddress::embedded("embedded");
  SocketAddress remote_ = SocketAddress::embedded("embedded");
};

}  // namespace trellis
