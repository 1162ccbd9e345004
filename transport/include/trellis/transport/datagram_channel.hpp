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
#include <trellis/transport/detail/loop_channel_registry.hpp>
#include <trellis/transport/detail/reactor_io_slot.hpp>
#include <trellis/transport/event_loop.hpp>

namespace trellis {

// Active from bind (or connect, which binds to an ephemeral port) until close. Inbound messages
// are DatagramPackets (recipient: the local address, sender: the peer). Outbound it takes
// DatagramPackets, and plain ByteBufs once connected. A failed send fails that write's promise
// and fires exception_caught, and so does a read error (a connected socket's ICMP "port
// unreachable" comes back as ECONNREFUSED): neither closes the channel, as in Netty.
class DatagramChannel final : public Channel,
                              public std::enable_shared_from_this<DatagramChannel>,
                              private detail::LoopRegisteredChannel {
 public:
  // Netty's FixedRecvByteBufAllocator default: enough for one Ethernet frame's payload.
  static constexpr int kDefaultMaxDatagramSize = 2048;
  // The largest UDP payload over IPv6 without jumbograms (65,535 - 8 bytes of UDP header).
  static constexpr int kMaxDatagramSize = 65527;

  static std::shared_ptr<DatagramChannel> create(EventLoop& loop);
  ~DatagramChannel() override;

  // Registers the channel with its loop (from any thread): options and handlers are set first.
  // The future completes on the loop once channel_registered has fired.
  Future<void> register_channel(UniqueFunction<void(DatagramChannel&)> before = {});
  // Socket options (applied when the socket is created, at bind or connect) and
  // max_datagram_size.
  void set_options(const ChannelOptions& options);

  // shared_from_this() gives a shared_ptr<DatagramChannel> (Channel::shared_from_this() a Channel).
  using std::enable_shared_from_this<DatagramChannel>::shared_from_this;

  bool is_open() const override { return state_.load(std::memory_order_acquire) != kClosed; }
  bool is_active() const override { return state_.load(std::memory_order_acquire) == kActive; }
  std::shared_ptr<Channel> shared_owner() noexcept override { return weak_from_this().lock(); }
  bool is_connected() const noexcept { return connected_.load(std::memory_order_acquire); }
  std::optional<SocketAddress> local_address() const override;
  // The connected peer; nullopt while not connected.
  std::optional<SocketAddress> remote_address() const override;

  // Joins / leaves a multicast group (IPv4 or IPv6, of the socket's family) on the interface
  // named (e.g. "lo"), or the one the kernel picks for the group. From any thread, once bound;
  // fails with IoError when the kernel refuses (no such interface, no multicast route...).
  Future<void> join_group(const SocketAddress& group, std::optional<std::string> interface = {});
  Future<void> leave_group(const SocketAddress& group, std::optional<std::string> interface = {});

  // The receive size: datagrams longer than this are dropped (and counted). From the loop.
  int max_datagram_size() const noexcept { return max_datagram_size_; }
  void set_max_datagram_size(int size);
  // How many datagrams were dropped because they did not fit max_datagram_size.
  std::uint64_t truncated_datagrams() const noexcept { return truncated_.load(); }
  // The socket (-1 before bind/connect and after close), for socket options trellis does not
  // wrap; use it on the loop.
  int native_handle() const noexcept { return fd_; }

 protected:
  void do_register() override;
  void do_bind(const SocketAddress& local) override;
  void do_connect(const SocketAddress& remote, const std::optional<SocketAddress>& local,
                  ChannelPromise promise) override;
  bool supports_disconnect() const noexcept override { return true; }
  void do_disconnect() override;
  void do_close() override;
  void do_deregister() override;
  void do_begin_read() override;
  void do_write(ChannelOutboundBuffer& out) override;
  Message filter_outbound_message(Message&& msg) override;
  void on_auto_read_cleared() override { read_pending_ = false; }

 private:
  enum State : int { kOpen, kActive, kClosed };
  struct PrivateTag {};

 public:
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
  std::optional<SocketAddress> local_;
  std::optional<SocketAddress> remote_;
};

}  // namespace trellis
