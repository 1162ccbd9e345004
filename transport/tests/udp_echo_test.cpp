// UDP echo over loopback (IPv4 and IPv6): thousands of self-checking datagrams, paced in
// windows so that none may be lost, come back intact and once each.
#include <sys/time.h>

#include <algorithm>
#include <vector>

#include <trellis/pipeline/detail/node_cache.hpp>
#include <trellis/testing/allocation_counter.hpp>

#include "udp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

// Sends `total` datagrams from client to server in windows of `window`, waiting for each
// window's echoes before the next (so the receive buffers never overflow and loss must be 0),
// then checks every echo: valid contents, each sequence number once, all of them.
void echo_in_windows(EventLoopGroup& group, const std::string& host, std::uint32_t total,
                     std::uint32_t window) {
  auto server = bind_udp(group, std::make_shared<UdpEchoHandler>(), host);
  auto collector = std::make_shared<UdpCollector>();
  auto client = bind_udp(group, collector, host);
  const SocketAddress to = *server->local_address();

  for (std::uint32_t sent = 0; sent < total;) {
    const std::uint32_t end = std::min(total, sent + window);
    for (; sent < end; ++sent) {
      client->write(Message(DatagramPacket{udp_buf(make_payload(sent)), to, {}}));
    }
    client->flush();
    INFO("echoes of the datagrams before #" << end);
    REQUIRE(collector->wait_for_count(end));
  }

  const auto received = collector->received();
  CHECK(received.size() == total);  // nothing more came late either
  std::vector<bool> seen(total, false);
  std::size_t corrupt = 0;
  std::size_t duplicates = 0;
  for (const auto& r : received) {
    const auto seq = check_payload(r.bytes);
    if (!seq || *seq >= total) {
      ++corrupt;
      continue;
    }
    if (seen[*seq]) ++duplicates;
    seen[*seq] = true;
    CHECK(r.sender == to);
  }
  CHECK(corrupt == 0);
  CHECK(duplicates == 0);
  CHECK(std::count(seen.begin(), seen.end(), true) == static_cast<std::ptrdiff_t>(total));
  CHECK(received.front().recipient == *client->local_address());
  CHECK(collector->errors().empty());

  close_and_wait(*client);
  close_and_wait(*server);
}

}  // namespace

TEST_CASE("10,000 datagrams echo over IPv4 loopback intact, once each, none lost when paced") {
  EventLoopGroup group(2);
  echo_in_windows(group, "127.0.0.1", 10'000, 32);
}

TEST_CASE("datagrams echo over IPv6 loopback") {
  if (!ipv6_loopback_available()) {
    MESSAGE("skipped: this machine cannot bind UDP to ::1");
    return;
  }
  EventLoopGroup group(2);
  echo_in_windows(group, "::1", 2'000, 32);
}

TEST_CASE("a burst larger than max_messages_per_read is read over several wake-ups") {
  // The limit bounds one wake-up; the rest must still be read (posted, not waiting for an edge
  // that will not come).
  EventLoopGroup group(1);
  auto collector = std::make_shared<UdpCollector>();
  Bootstrap options;
  options.option(channel_option::max_messages_per_read, 2);
  auto receiver = bind_udp(group, collector, "127.0.0.1", options);
  auto sender = bind_udp(group, std::make_shared<UdpCollector>());
  const SocketAddress to = *receiver->local_address();
  // Sent from the loop in one go, before the receiver's loop turn can read any of them.
  on_loop(*sender, [&] {
    for (std::uint32_t i = 0; i < 20; ++i) {
      sender->write(Message(DatagramPacket{udp_buf(make_payload(i)), to, {}}));
    }
    sender->flush();
    return 0;
  });
  REQUIRE(collector->wait_for_count(20));
  for (const auto& r : collector->received()) CHECK(check_payload(r.bytes).has_value());
  close_and_wait(*sender);
  close_and_wait(*receiver);
}

TEST_CASE("an echoed datagram allocates nothing in steady state") {
  if (!testing::allocation_hook_installed()) {
    MESSAGE("allocation hook not linked; skipped");
    return;
  }
  EventLoopGroup group(1);
  auto server = bind_udp(group, std::make_shared<UdpEchoHandler>());
  const SocketAddress to = *server->local_address();
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  REQUIRE(::connect(fd, to.sockaddr_ptr(), to.length()) == 0);
  const std::string msg = make_payload(7, 64);
  // No std::string temporaries here: the count covers every thread, this one included.
  auto round_trips = [&](int n) {
    char buf[256];
    for (int i = 0; i < n; ++i) {
      if (::send(fd, msg.data(), msg.size(), 0) != static_cast<ssize_t>(msg.size())) return false;
      const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
      if (r != static_cast<ssize_t>(msg.size()) || std::memcmp(buf, msg.data(), msg.size()) != 0) {
        return false;
      }
    }
    return true;
  };
  REQUIRE(round_trips(2000));  // warm the pools, the message boxes and Asio's handler caches
  const auto before = testing::total_allocations();
  REQUIRE(round_trips(2000));
  const auto allocations = testing::total_allocations() - before;
  MESSAGE("allocations over 2000 echoed datagrams: " << allocations);
#if TRELLIS_NODE_CACHE_ENABLED
  CHECK(allocations == 0);
#else
  // Under ASan the message box caches are off: the inbound and the outbound DatagramPacket box
  // are then the two allocations of a round trip.
  CHECK(allocations <= 2 * 2000);
#endif
  ::close(fd);
  close_and_wait(*server);
}
