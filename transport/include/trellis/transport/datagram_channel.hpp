// DatagramChannel: a UDP socket (IPv4 or IPv6) on an EventLoop that reads and writes
// DatagramPackets. Reads are reactive (up to max_messages_per_read datagrams per wake-up, each
// into a pooled buffer of max_datagram_size); each flushed packet is one sendmsg.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/datagram_packet.hpp>
#include <trellis/transport/channel_option.hpp>
#include <trellis/transport/detail/address_slot.hpp>
#include <trellis/transport/detail/loop_channel_registry.hpp>
#include <trellis/transport/detail/reactor_io_slot.hpp>
#include <trellis/transport/event_loop.hpp>

namespace trellis {

/// Active from bind (or connect, which binds to an ephemeral port) until close. Inbound messages
/// are DatagramPackets (recipient: the local address, sender: the peer). Outbound it takes
/// DatagramPackets, and plain ByteBufs once connected. A failed send fails that write's promise
/// and fires exception_caught, and so does a read error (a connected socket's ICMP "port
/// unreachable" comes back as ECONNREFUSED): neither closes the channel, as in Netty. Channel
/// operations may be called from any thread (they run on the loop).
class DatagramChannel final : public Channel,
                              public std::enable_shared_from_this<DatagramChannel>,
                              private detail::LoopRegisteredChannel {
 public:
  /// Netty's FixedRecvByteBufAllocator default: enough for one Ethernet frame's payload.
  static constexpr int kDefaultMaxDatagramSize = 2048;
  /// The largest UDP payload over IPv6 without jumbograms (65,535 - 8 bytes of UDP header).
  static constexpr int kMaxDatagramSize = 65527;

  /// A new, unregistered channel on loop (usually made by Bootstrap).
  static std::shared_ptr<DatagramChannel> create(EventLoop& loop);
  ~DatagramChannel() override;

  /// Registers the channel with its loop (from any thread): options and handlers are set first.
  /// The future completes on the loop once channel_registered has fired.
  Future<void> register_channel(UniqueFunction<void(DatagramChannel&)> before = {});
  /// Socket options (applied when the socket is created, at bind or connect) and
  /// max_datagram_size.
  void set_options(const ChannelOptions& options);

  /// shared_from_this() gives a shared_ptr<DatagramChannel> (Channel::shared_from_this() a
  /// Channel).
  using std::enable_shared_from_this<DatagramChannel>::shared_from_this;

  /// True until closed.
  bool is_open() const override { return state_.load(std::memory_order_acquire) != kClosed; }
  /// True from bind (or connect) until close.
  bool is_active() const override { return state_.load(std::memory_order_acquire) == kActive; }
  /// Internal: a shared_ptr to this channel (null once it is being destroyed).
  std::shared_ptr<Channel> shared_owner() noexcept override { return weak_from_this().lock(); }
  /// True while connected to a peer.
  bool is_connected() const noexcept { return connected_.load(std::memory_order_acquire); }
  /// The bound address, once bound.
  std::optional<SocketAddress> local_address() const override;
  /// The connected peer; nullopt while not connected.
  std::optional<SocketAddress> remote_address() const override;

  /// Joins / leaves a multicast group (IPv4 or IPv6, of the socket's family) on the interface
  /// named (e.g. "lo"), or the one the kernel picks for the group. From any thread, once bound;
  /// fails with IoError when the kernel refuses (no such interface, no multicast route...).
  Future<void> join_group(const SocketAddress& group, std::optional<std::string> interface = {});
  /// Leaves a group joined with join_group(); fails like it.
  Future<void> leave_group(const SocketAddress& group, std::optional<std::string> interface = {});

  /// The receive size: datagrams longer than this are dropped (and counted). From the loop.
  int max_datagram_size() const noexcept { return max_datagram_size_; }
  /// Sets the receive size, 1..kMaxDatagramSize (InvalidArgumentError otherwise). From the loop.
  void set_max_datagram_size(int size);
  /// How many datagrams were dropped because they did not fit max_datagram_size.
  std::uint64_t truncated_datagrams() const noexcept { return truncated_.load(); }
  /// The socket (-1 before bind/connect and after close), for socket options trellis does not
  /// wrap; use it on the loop.
  int native_handle() const noexcept { return fd_; }

 protected:
  /// Internal: joins the loop's channel registry.
  void do_register() override;
  /// Internal: creates the socket and binds it (IoError on failure).
  void do_bind(const SocketAddress& local) override;
  /// Internal: connects the socket to remote (binding it first when needed).
  void do_connect(const SocketAddress& remote, const std::optional<SocketAddress>& local,
                  ChannelPromise promise) override;
  /// Internal: a datagram channel can disconnect.
  bool supports_disconnect() const noexcept override { return true; }
  /// Internal: dissolves the connection (IoError on failure); the channel stays bound.
  void do_disconnect() override;
  /// Internal: closes the socket, aborting its waits.
  void do_close() override;
  /// Internal: leaves the loop's registry and releases the socket.
  void do_deregister() override;
  /// Internal: starts reading.
  void do_begin_read() override;
  /// Internal: sends the flushed datagrams, waiting for writability when the socket is full.
  void do_write(ChannelOutboundBuffer& out) override;
  /// Internal: accepts DatagramPacket, and ByteBuf once connected (IllegalStateError before;
  /// InvalidArgumentError for other types).
  Message filter_outbound_message(Message&& msg) override;
  /// Internal: a pending read request is dropped.
  void on_auto_read_cleared() override { read_pending_ = false; }

 private:
  enum State : int { kOpen, kActive, kClosed };
  struct PrivateTag {};

 public:
  /// Internal: use create().
  DatagramChannel(PrivateTag, EventLoop& loop);

 private:
  void close_for_shutdown() override;
  void ensure_socket(int family);
  void arm_read();
  static void on_read_ready(void* self, const std::error_code& ec);
  static void on_write_ready(void* self, const std::error_code& ec);
  void on_readable(const std::error_code& ec);
  void arm_write();
  Future<void> change_membership(const SocketAddress& group, std::optional<std::string> interface,
                                 bool join);
  void do_change_membership(const SocketAddress& group, const std::optional<std::string>& interface,
                            bool join);

  EventLoop& loop_;
  // The socket on the loop's reactor and its read and write waits (reactor_io.hpp), held
  // inside the channel: no allocation per connection.
  detail::ReactorIoSlot io_;
  int fd_ = -1;
  std::atomic<int> state_{kOpen};
  std::atomic<bool> connected_{false};
  std::atomic<std::uint64_t> truncated_{0};
  std::optional<ChannelOptions> options_;
  std::shared_ptr<DatagramChannel> self_;  // from registration until unregistered
  int max_datagram_size_ = kDefaultMaxDatagramSize;
  bool read_pending_ = false;
  bool waiting_read_ = false;
  bool waiting_write_ = false;
  // The last wake-up did not read until EAGAIN (read limit, or reading was off): the next read
  // must not wait for an edge that may never come.
  bool maybe_more_ = false;
  // Rewritten on the loop, read from any thread.
  detail::AddressSlot local_;
  detail::AddressSlot remote_;
};

}  // namespace trellis
