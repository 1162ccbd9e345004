// local_address() / remote_address() from another thread while the loop rewrites them: a
// datagram channel connected and disconnected over and over on its loop, read meanwhile from the
// test's thread. Meant for the TSan build (a race is reported there); in any build every value
// read must be one the loop actually set.
#include <atomic>
#include <thread>

#include "udp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

TEST_CASE("a datagram channel's addresses can be read from any thread while it (dis)connects") {
  EventLoopGroup group(1);
  auto peer = bind_udp(group, std::make_shared<UdpCollector>());
  auto ch = bind_udp(group, std::make_shared<UdpCollector>());
  const SocketAddress peer_address = *peer->local_address();
  // Bound to port 0, so a disconnect may give the port back and the next connect pick another:
  // the local address keeps its IP, not its port.
  auto loopback = [](const std::optional<SocketAddress>& a) {
    return a && a->kind() == SocketAddress::Kind::kIpv4 && a->ip() == "127.0.0.1";
  };

  constexpr int kRounds = 2000;
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::atomic<int> wrong{0};
  std::thread reader([&] {
    while (!done.load(std::memory_order_acquire)) {
      const auto remote = ch->remote_address();
      const auto local = ch->local_address();
      if (remote && !(*remote == peer_address)) wrong.fetch_add(1);
      if (!loopback(local)) wrong.fetch_add(1);
      reads.fetch_add(1, std::memory_order_relaxed);
    }
  });
  while (reads.load() == 0) std::this_thread::yield();  // the reader runs before the rounds
  // On the loop: each connect and disconnect rewrites both addresses.
  const int rounds = on_loop(*ch, [&] {
    int n = 0;
    for (; n < kRounds; ++n) {
      auto connected = ch->new_promise();
      ch->connect(peer_address, connected);
      if (!connected.future().is_success()) break;
      auto disconnected = ch->new_promise();
      ch->disconnect(disconnected);
      if (!disconnected.future().is_success()) break;
    }
    return n;
  });
  done.store(true, std::memory_order_release);
  reader.join();
  CHECK(rounds == kRounds);
  CHECK(reads.load() > 0);
  CHECK(wrong.load() == 0);
  CHECK_FALSE(ch->remote_address().has_value());
  CHECK(loopback(ch->local_address()));
  close_and_wait(*ch);
  close_and_wait(*peer);
}
