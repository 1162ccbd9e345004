// ServerSocketChannel: a listening stream socket (TCP over IPv4/IPv6, or Unix domain) on an
// EventLoop. Each accepted connection is fired through its pipeline as a channel_read of a
// std::shared_ptr<SocketChannel> (ServerBootstrap's acceptor sets it up and registers it).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <trellis/pipeline/channel.hpp>
#include <trellis/transport/channel_option.hpp>
#include <trellis/transport/detail/address_slot.hpp>
#include <trellis/transport/detail/loop_channel_registry.hpp>
#include <trellis/transport/event_loop.hpp>
#include <trellis/transport/socket_channel.hpp>

namespace trellis {

/// A listening stream socket (TCP over IPv4/IPv6, or Unix domain) on an EventLoop. Each accepted
/// connection is fired through its pipeline as a channel_read of a std::shared_ptr<SocketChannel>.
/// Usually made by ServerBootstrap. Channel operations may be called from any thread (they run
/// on the loop); a failed bind fails its promise with IoError.
class ServerSocketChannel final : public Channel,
                                  public std::enable_shared_from_this<ServerSocketChannel>,
                                  private detail::LoopRegisteredChannel {
 public:
  /// How long accepting pauses after EMFILE/ENFILE (no descriptors left).
  static constexpr std::chrono::milliseconds kAcceptBackoff{100};
  /// Picks the loop of each accepted channel (the child group's next()); default: this loop.
  using ChildLoopChooser = std::function<EventLoop&()>;

  /// A new, unregistered server channel on loop.
  static std::shared_ptr<ServerSocketChannel> create(EventLoop& loop,
                                                     ChildLoopChooser chooser = {});
  ~ServerSocketChannel() override;

  /// Registers with the loop from any thread; `before` runs on the loop first (add handlers).
  Future<void> register_channel(UniqueFunction<void(ServerSocketChannel&)> before = {});
  /// Options of the listening socket (SO_REUSEADDR, SO_REUSEPORT, SO_BACKLOG, ...), before bind.
  void set_options(const ChannelOptions& options) { options_ = options; }

  /// shared_from_this() gives a shared_ptr<ServerSocketChannel> (Channel::shared_from_this() a
  /// Channel).
  using std::enable_shared_from_this<ServerSocketChannel>::shared_from_this;

  /// True until closed.
  bool is_open() const override { return state_.load(std::memory_order_acquire) != kClosed; }
  /// True while bound and listening.
  bool is_active() const override { return state_.load(std::memory_order_acquire) == kActive; }
  /// Internal: a shared_ptr to this channel (null once it is being destroyed).
  std::shared_ptr<Channel> shared_owner() noexcept override { return weak_from_this().lock(); }
  /// The bound address (with the port the system chose for port 0), once bound.
  std::optional<SocketAddress> local_address() const override { return local_.load(); }
  /// Always empty: a listening socket has no peer.
  std::optional<SocketAddress> remote_address() const override { return std::nullopt; }
  /// How many times accepting backed off for lack of descriptors (for tests).
  std::uint64_t accept_backoffs() const noexcept { return backoffs_.load(); }
  /// True while accepting is paused by a back-off (for tests; from any thread).
  bool accept_paused() const noexcept { return backing_off_.load(std::memory_order_relaxed); }

 protected:
  /// Internal: joins the loop's channel registry.
  void do_register() override;
  /// Internal: opens the socket, applies the options, binds and listens (IoError on failure).
  void do_bind(const SocketAddress& local) override;
  /// Internal: throws IllegalStateError (a listening socket does not connect).
  void do_connect(const SocketAddress&, const std::optional<SocketAddress>&,
                  ChannelPromise) override;
  /// Internal: closes the listening socket.
  void do_close() override;
  /// Internal: leaves the loop's registry and releases the socket.
  void do_deregister() override;
  /// Internal: starts accepting.
  void do_begin_read() override;
  /// Internal: fails every flushed write with IllegalStateError.
  void do_write(ChannelOutboundBuffer& out) override;
  /// Internal: a pending read request is dropped.
  void on_auto_read_cleared() override { read_pending_ = false; }

 private:
  enum State : int { kOpen, kActive, kClosed };
  struct PrivateTag {};
  struct Listener;  // the listening socket on the loop's reactor (server_socket_channel.cpp)

 public:
  /// Internal: use create().
  ServerSocketChannel(PrivateTag, EventLoop& loop, ChildLoopChooser chooser);

 private:
  void close_for_shutdown() override;
  void arm_accept();
  void on_acceptable(const std::error_code& ec);
  void back_off(int error);

  EventLoop& loop_;
  ChildLoopChooser chooser_;
  std::unique_ptr<Listener> socket_;  // from bind until deregistration
  int fd_ = -1;
  std::atomic<int> state_{kOpen};
  ChannelOptions options_;
  std::shared_ptr<ServerSocketChannel> self_;
  detail::AddressSlot local_;  // set on the loop, read from any thread
  // Every accepted socket's local address when the listener is bound to one address (a wildcard
  // listener leaves it empty: each child asks the kernel), and the listener's family.
  std::optional<SocketAddress> child_local_;
  int child_family_ = 0;
  bool read_pending_ = false;
  bool waiting_ = false;
  // The last accept batch ended before EAGAIN (its limit, auto_read off, a back-off): the next
  // one starts without waiting for an edge.
  bool accept_maybe_more_ = false;
  std::atomic<bool> backing_off_{false};  // written on the loop only
  std::int64_t last_backoff_log_ = INT64_MIN / 2;
  std::atomic<std::uint64_t> backoffs_{0};
};

}  // namespace trellis
