// SocketChannel: a connected stream socket (TCP over IPv4/IPv6, or a Unix domain stream
// socket) on an EventLoop. Reads are reactive (wait for readability, then read non-blocking
// into a pooled ByteBuf of adaptive size); writes gather the flushed ByteBufs into one sendmsg,
// and a FileRegion goes from the file to the socket with sendfile(2).
// A peer's FIN closes the channel once what was flushed has been written (see on_eof), unless
// half-closure is allowed.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/file_region.hpp>
#include <trellis/pipeline/scheduled_future.hpp>
#include <trellis/transport/channel_option.hpp>
#include <trellis/transport/detail/address_slot.hpp>
#include <trellis/transport/detail/loop_channel_registry.hpp>
#include <trellis/transport/detail/reactor_io_slot.hpp>
#include <trellis/transport/event_loop.hpp>

namespace trellis {

/// A connect attempt did not complete within the connect timeout.
class ConnectTimeoutError : public IoError {
 public:
  using IoError::IoError;
};

/// A connected stream socket (TCP over IPv4/IPv6, or Unix domain) on an EventLoop: a client's,
/// made by Bootstrap, or one a ServerSocketChannel accepted. It reads ByteBufs and writes
/// ByteBuf, CompositeByteBuf and FileRegion messages. Channel operations may be called from any
/// thread (they run on the loop). A failed connect fails its promise with IoError
/// (ConnectTimeoutError when the connect timeout ran out); a write of another type fails with
/// InvalidArgumentError, and writes after shutdown_output() or close with ClosedChannelError.
class SocketChannel final : public Channel,
                            public std::enable_shared_from_this<SocketChannel>,
                            private detail::LoopRegisteredChannel {
 public:
  /// The smallest receive buffer of the adaptive read size.
  static constexpr std::size_t kMinReadSize = 64;
  /// The first receive buffer size.
  static constexpr std::size_t kInitialReadSize = 2048;
  /// The largest receive buffer of the adaptive read size.
  static constexpr std::size_t kMaxReadSize = 64 * 1024;

  /// An unconnected channel (a client's); the socket is created by connect or bind.
  static std::shared_ptr<SocketChannel> create(EventLoop& loop);
  /// A channel over an accepted, non-blocking socket fd (takes ownership of fd).
  static std::shared_ptr<SocketChannel> create_accepted(EventLoop& loop, Channel* parent, int fd);

  ~SocketChannel() override;

  /// Registers the channel with its loop (from any thread): options and handlers are set first.
  /// The future completes on the loop once channel_registered has fired.
  Future<void> register_channel(UniqueFunction<void(SocketChannel&)> before = {});
  /// Socket options for the socket, applied when the socket exists (now, or at connect/bind).
  void set_options(const ChannelOptions& options);
  /// The same, sharing options with other channels (a server's accepted children).
  void set_options(std::shared_ptr<const ChannelOptions> options);

  /// shared_from_this() gives a shared_ptr<SocketChannel> (Channel::shared_from_this() a Channel).
  using std::enable_shared_from_this<SocketChannel>::shared_from_this;

  /// True until closed.
  bool is_open() const override { return state_.load(std::memory_order_acquire) != kClosed; }
  /// True while connected.
  bool is_active() const override { return state_.load(std::memory_order_acquire) == kActive; }
  /// Internal: a shared_ptr to this channel (null once it is being destroyed).
  std::shared_ptr<Channel> shared_owner() noexcept override { return weak_from_this().lock(); }
  /// The socket's local address, once bound or connected.
  std::optional<SocketAddress> local_address() const override;
  /// The peer's address, once connected.
  std::optional<SocketAddress> remote_address() const override;

  /// True once shutdown_output() (which goes through the pipeline, from any thread) took effect.
  bool is_output_shutdown() const noexcept override { return output_shutdown_.load(); }
  /// True once the peer's FIN was read: with half-closure, and also while the channel (without
  /// half-closure) writes its flushed output before it closes.
  bool is_input_shutdown() const noexcept { return input_shutdown_.load(); }
  /// With half-closure allowed, a peer's FIN fires ChannelInputShutdownEvent instead of closing.
  /// Without it (the default) the channel stops reading and closes once the writes flushed so
  /// far are written, within config().eof_drain_timeout() of the FIN.
  void set_allow_half_closure(bool on) noexcept { allow_half_closure_.store(on); }
  /// Whether a peer's FIN fires ChannelInputShutdownEvent instead of closing.
  bool allow_half_closure() const noexcept { return allow_half_closure_.load(); }
  /// The current adaptive read size (for tests).
  std::size_t read_size() const noexcept { return read_size_; }
  /// When a peer's FIN started a drain of the flushed writes (no half-closure): its deadline on
  /// the loop's clock (current_time_nanos()); it stays set after the close. For tests.
  std::optional<std::int64_t> eof_drain_deadline_nanos() const noexcept {
    const std::int64_t d = eof_drain_deadline_.load(std::memory_order_acquire);
    if (d == kNoDeadline) return std::nullopt;
    return d;
  }

 protected:
  /// Internal: puts an accepted socket on the loop's reactor and joins the loop's registry.
  void do_register() override;
  /// Internal: creates the socket and binds it (IoError on failure).
  void do_bind(const SocketAddress& local) override;
  /// Internal: starts a non-blocking connect; the promise completes when it does.
  void do_connect(const SocketAddress& remote, const std::optional<SocketAddress>& local,
                  ChannelPromise promise) override;
  /// Internal: closes the socket, aborting its waits.
  void do_close() override;
  /// Internal: leaves the loop's registry and releases the socket.
  void do_deregister() override;
  /// Internal: starts reading.
  void do_begin_read() override;
  /// Internal: writes the flushed messages, waiting for writability when the socket is full.
  void do_write(ChannelOutboundBuffer& out) override;
  /// Internal: accepts ByteBuf, CompositeByteBuf and FileRegion (InvalidArgumentError
  /// otherwise; ClosedChannelError after shutdown_output()).
  Message filter_outbound_message(Message&& msg) override;
  /// Internal: a pending read request is dropped.
  void on_auto_read_cleared() override { read_pending_ = false; }
  /// Internal: sends FIN (shutdown(SHUT_WR)); flushed writes not yet sent fail.
  void do_shutdown_output() override;

 private:
  enum State : int { kOpen, kConnecting, kActive, kClosed };
  struct PrivateTag {};
  static constexpr std::int64_t kNoDeadline = std::numeric_limits<std::int64_t>::min();

 public:
  /// Internal: use create() or create_accepted().
  SocketChannel(PrivateTag, EventLoop& loop, Channel* parent, int fd);

 private:
  friend class ServerSocketChannel;
  // What a ServerSocketChannel knows of a socket it has just accepted: the peer's address (from
  // accept4), the local one (the listener's, when it is bound to one address), the family. The
  // descriptor is the socket's only one, so closing it also takes it out of the epoll set.
  struct Accepted {
    std::optional<SocketAddress> local;
    std::optional<SocketAddress> remote;
    int family = 0;
  };
  static std::shared_ptr<SocketChannel> create_accepted(EventLoop& loop, Channel* parent, int fd,
                                                        Accepted accepted);
  SocketChannel(PrivateTag, EventLoop& loop, Channel* parent, int fd, Accepted accepted);

 private:
  void close_for_shutdown() override;
  void ensure_socket(int family);
  void arm_read();
  static void on_read_ready(void* self, const std::error_code& ec);
  static void on_write_ready(void* self, const std::error_code& ec);
  static void on_connect_wait(void* self, const std::error_code& ec);
  void on_readable(const std::error_code& ec);
  void on_eof();
  // A FIN without half-closure: closes now, or once the flushed writes are written (a drain).
  void close_when_drained();
  void write_flushed_messages(ChannelOutboundBuffer& out);
  void arm_write();
  // After a send returned -1: true to try again (EINTR); false when the socket is full (a
  // writability wait is armed). Any other error is fired and rethrown for Channel::Unsafe.
  bool send_failed();
  // One sendfile(2) of the first flushed message, a FileRegion; removes it when done. Returns
  // false when the socket is full (the write wait is armed). Throws IoError when the file ends
  // before the region does, or on a socket error.
  bool send_file_region(ChannelOutboundBuffer& out, FileRegion& region);
  void on_connect_ready(const std::error_code& ec);
  void finish_connect(std::error_code error);
  void record_read(std::size_t n) noexcept;
  void apply_options();

  // What only a connecting channel needs: created by do_connect, dropped when it completes.
  struct ConnectState {
    ChannelPromise promise;
    std::optional<ScheduledFuture<void>> timeout;
    SocketAddress remote;  // as requested
  };

  EventLoop& loop_;
  // The socket on the loop's reactor and its read and write waits (reactor_io.hpp), held
  // inside the channel: no allocation per connection.
  detail::ReactorIoSlot io_;
  int fd_ = -1;
  // The socket's family when known without asking the kernel (0: ask), and whether fd_ is the
  // socket's only descriptor (created or accepted here): then closing it leaves the epoll set.
  int family_ = 0;
  bool sole_descriptor_ = false;
  std::atomic<int> state_{kOpen};
  std::atomic<bool> input_shutdown_{false};
  std::atomic<bool> output_shutdown_{false};
  std::atomic<bool> allow_half_closure_{false};
  std::shared_ptr<const ChannelOptions> options_;  // nullptr: none set
  std::shared_ptr<SocketChannel> self_;            // from registration until unregistered
  bool read_pending_ = false;
  bool waiting_read_ = false;
  bool waiting_write_ = false;
  // A write turn that used its sendfile budget posted its continuation (see
  // write_flushed_messages): the other channels of the loop get their turn first.
  bool write_continuation_posted_ = false;
  // The last wake-up did not read until EAGAIN (read limit, or reading was off): the next read
  // must not wait for an edge that may never come.
  bool maybe_more_ = false;
  // A wake-up reported the peer's FIN (EPOLLRDHUP): from then on reads go on to EAGAIN or end
  // of stream, since a short read no longer proves the socket empty.
  bool peer_closed_seen_ = false;
  std::size_t read_size_ = kInitialReadSize;
  int small_reads_ = 0;
  std::unique_ptr<ConnectState> connect_;  // while connecting
  // A read failed (the connection was reset): later writes fail with this, unsent.
  std::exception_ptr read_failure_;
  // From a peer's FIN (without half-closure) to the close: the flushed writes are being written.
  bool draining_ = false;
  std::optional<ScheduledFuture<void>> drain_timeout_;  // while draining
  std::atomic<std::int64_t> eof_drain_deadline_{kNoDeadline};
  // Rewritten on the loop, read from any thread.
  detail::AddressSlot local_;
  detail::AddressSlot remote_;
};

}  // namespace trellis
