// DatagramChannel behaviour: connected channels, auto_read off + read(), failed writes that do
// not close, truncated datagrams, options (SO_BROADCAST) and the Bootstrap's checks.
#include <thread>

#include "udp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

// A loopback UDP port with nobody behind it (bound, then closed).
std::uint16_t closed_udp_port() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  socklen_t len = sizeof sa;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0);
  ::close(fd);
  return ntohs(sa.sin_port);
}

std::error_code io_error_code(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const IoError& e) {
    return e.code();
  } catch (...) {
  }
  return {};
}

int get_int_option(DatagramChannel& ch, int level, int name) {
  return on_loop(ch, [&] {
    int value = -1;
    socklen_t len = sizeof value;
    REQUIRE(::getsockopt(ch.native_handle(), level, name, &value, &len) == 0);
    return value;
  });
}

}  // namespace

TEST_CASE("a connected datagram channel has a remote address and writes plain ByteBufs") {
  EventLoopGroup group(2);
  auto server = bind_udp(group, std::make_shared<UdpEchoHandler>());
  const SocketAddress server_address = *server->local_address();
  auto collector = std::make_shared<UdpCollector>();
  auto f = Bootstrap().group(group).channel<DatagramChannel>().handler(collector).connect(
      "127.0.0.1", server_address.port());
  REQUIRE(f.wait_for(kUdpWait));
  REQUIRE(f.is_success());
  auto client = std::static_pointer_cast<DatagramChannel>(f.get());
  CHECK(client->is_active());
  CHECK(client->is_connected());
  REQUIRE(client->remote_address().has_value());
  CHECK(*client->remote_address() == server_address);
  REQUIRE(client->local_address().has_value());
  CHECK(client->local_address()->port() != 0);

  auto write = client->new_promise();
  client->write_and_flush(Message(udp_buf("plain bytes")), write);
  REQUIRE(write.future().wait_for(kUdpWait));
  CHECK(write.future().is_success());
  // A packet without a recipient goes to the connected peer too.
  client->write_and_flush(Message(DatagramPacket{udp_buf("no recipient"), {}, {}}));
  REQUIRE(collector->wait_for_count(2));
  const auto received = collector->received();
  CHECK(received[0].bytes == "plain bytes");
  CHECK(received[1].bytes == "no recipient");
  CHECK(received[0].sender == server_address);

  // disconnect() forgets the peer; the channel stays bound and active.
  client->disconnect();
  on_loop(*client, [] { return 0; });
  CHECK_FALSE(client->is_connected());
  CHECK_FALSE(client->remote_address().has_value());
  CHECK(client->is_active());
  close_and_wait(*client);
  close_and_wait(*server);
}

TEST_CASE("an unconnected datagram channel refuses plain ByteBufs") {
  EventLoopGroup group(1);
  auto ch = bind_udp(group, std::make_shared<UdpCollector>());
  auto write = ch->new_promise();
  ch->write_and_flush(Message(udp_buf("where to?")), write);
  REQUIRE(write.future().wait_for(kUdpWait));
  REQUIRE((write.future().is_done() && !write.future().is_success()));
  CHECK_THROWS_AS(std::rethrow_exception(write.future().cause()), IllegalStateError);
  CHECK(ch->is_open());
  close_and_wait(*ch);
}

TEST_CASE("ECONNREFUSED on a connected datagram channel is fired and does not close it") {
  EventLoopGroup group(1);
  auto collector = std::make_shared<UdpCollector>();
  auto f = Bootstrap().group(group).channel<DatagramChannel>().handler(collector).connect(
      SocketAddress::from_ip("127.0.0.1", closed_udp_port()));
  REQUIRE(f.wait_for(kUdpWait));
  REQUIRE(f.is_success());
  auto ch = std::static_pointer_cast<DatagramChannel>(f.get());
  // The kernel answers the ICMP "port unreachable" with an error on the socket: the next read
  // (or send) reports it. Send a few times, bounded, until it is seen.
  for (int i = 0; i < 50 && collector->errors().empty(); ++i) {
    ch->write_and_flush(Message(udp_buf("anyone?")));
    collector->wait_for_errors(1, 100ms);
  }
  const auto errors = collector->errors();
  REQUIRE_FALSE(errors.empty());
  CHECK(io_error_code(errors.front()) == std::errc::connection_refused);
  CHECK(ch->is_open());
  CHECK(ch->is_active());
  close_and_wait(*ch);
}

TEST_CASE("a datagram the kernel refuses fails its promise only; the next one goes") {
  EventLoopGroup group(1);
  auto collector = std::make_shared<UdpCollector>();
  auto receiver = bind_udp(group, collector);
  auto sender = bind_udp(group, std::make_shared<UdpCollector>());
  // An IPv6 recipient for an IPv4 socket.
  auto bad = sender->new_promise();
  sender->write(Message(DatagramPacket{udp_buf("lost"), SocketAddress::from_ip("::1", 9), {}}),
                bad);
  auto good = sender->new_promise();
  sender->write(Message(DatagramPacket{udp_buf("arrives"), *receiver->local_address(), {}}), good);
  sender->flush();
  REQUIRE(bad.future().wait_for(kUdpWait));
  REQUIRE(good.future().wait_for(kUdpWait));
  REQUIRE((bad.future().is_done() && !bad.future().is_success()));
  CHECK(static_cast<bool>(io_error_code(bad.future().cause())));
  CHECK(good.future().is_success());
  REQUIRE(collector->wait_for_count(1));
  CHECK(collector->received()[0].bytes == "arrives");
  CHECK(sender->is_active());
  close_and_wait(*sender);
  close_and_wait(*receiver);
}

TEST_CASE("a write on a closed datagram channel fails its promise") {
  EventLoopGroup group(1);
  auto receiver = bind_udp(group, std::make_shared<UdpCollector>());
  auto ch = bind_udp(group, std::make_shared<UdpCollector>());
  close_and_wait(*ch);
  CHECK_FALSE(ch->is_open());
  auto write = ch->new_promise();
  ch->write_and_flush(Message(DatagramPacket{udp_buf("too late"), *receiver->local_address(), {}}),
                      write);
  REQUIRE(write.future().wait_for(kUdpWait));
  REQUIRE((write.future().is_done() && !write.future().is_success()));
  CHECK_THROWS_AS(std::rethrow_exception(write.future().cause()), ClosedChannelError);
  close_and_wait(*receiver);
}

TEST_CASE("with auto_read off a datagram channel reads only when read() asks") {
  EventLoopGroup group(1);
  auto collector = std::make_shared<UdpCollector>();
  Bootstrap options;
  options.option(channel_option::auto_read, false).option(channel_option::max_messages_per_read, 1);
  auto receiver = bind_udp(group, collector, "127.0.0.1", options);
  auto sender = bind_udp(group, std::make_shared<UdpCollector>());
  const SocketAddress to = *receiver->local_address();
  for (int i = 0; i < 3; ++i) {
    sender->write(Message(DatagramPacket{udp_buf("d" + std::to_string(i)), to, {}}));
  }
  auto flushed = sender->new_promise();
  sender->write_and_flush(Message(DatagramPacket{udp_buf("d3"), to, {}}), flushed);
  REQUIRE(flushed.future().wait_for(kUdpWait));
  std::this_thread::sleep_for(100ms);
  CHECK(collector->count() == 0);
  for (std::size_t n = 1; n <= 4; ++n) {
    receiver->read();
    REQUIRE(collector->wait_for_count(n));
    std::this_thread::sleep_for(30ms);
    CHECK(collector->count() == n);  // one read(), one datagram (max_messages_per_read 1)
  }
  const auto received = collector->received();
  for (std::size_t i = 0; i < received.size(); ++i) {
    CHECK(received[i].bytes == "d" + std::to_string(i));
  }
  close_and_wait(*sender);
  close_and_wait(*receiver);
}

TEST_CASE("datagrams longer than max_datagram_size are dropped and counted") {
  EventLoopGroup group(1);
  auto collector = std::make_shared<UdpCollector>();
  Bootstrap options;
  options.option(channel_option::max_datagram_size, 100);
  auto receiver = bind_udp(group, collector, "127.0.0.1", options);
  CHECK(receiver->max_datagram_size() == 100);
  auto sender = bind_udp(group, std::make_shared<UdpCollector>());
  const SocketAddress to = *receiver->local_address();
  sender->write(Message(DatagramPacket{udp_buf(std::string(101, 'x')), to, {}}));
  sender->write(Message(DatagramPacket{udp_buf(std::string(100, 'y')), to, {}}));
  sender->write_and_flush(Message(DatagramPacket{udp_buf("small"), to, {}}));
  REQUIRE(collector->wait_for_count(2));
  const auto received = collector->received();
  CHECK(received[0].bytes == std::string(100, 'y'));
  CHECK(received[1].bytes == "small");
  CHECK(receiver->truncated_datagrams() == 1);
  CHECK(collector->errors().empty());
  close_and_wait(*sender);
  close_and_wait(*receiver);
}

TEST_CASE("SO_BROADCAST is applied to a datagram channel's socket") {
  EventLoopGroup group(1);
  Bootstrap with;
  with.option(channel_option::so_broadcast, true);
  auto on = bind_udp(group, std::make_shared<UdpCollector>(), "127.0.0.1", with);
  CHECK(get_int_option(*on, SOL_SOCKET, SO_BROADCAST) == 1);
  auto off = bind_udp(group, std::make_shared<UdpCollector>());
  CHECK(get_int_option(*off, SOL_SOCKET, SO_BROADCAST) == 0);
  close_and_wait(*on);
  close_and_wait(*off);
}

TEST_CASE("Bootstrap binds datagram channels only") {
  EventLoopGroup group(1);
  CHECK_THROWS_AS(Bootstrap().group(group).bind("127.0.0.1", 0), IllegalStateError);
  // A second bind of a bound channel fails its promise; the channel stays bound.
  auto ch = bind_udp(group, std::make_shared<UdpCollector>());
  auto again = ch->new_promise();
  ch->bind(SocketAddress::from_ip("127.0.0.1", 0), again);
  REQUIRE(again.future().wait_for(kUdpWait));
  CHECK_FALSE(again.future().is_success());
  CHECK(ch->is_active());
  close_and_wait(*ch);
}
