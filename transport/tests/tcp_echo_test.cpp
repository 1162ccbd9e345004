// TCP echo over loopback: payloads of 1 byte to 16 MiB with random split points, many
// concurrent connections, IPv6, trellis clients, connection refused.
#include <doctest/doctest.h>

#include <random>
#include <thread>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

TEST_CASE("tcp echo returns payloads of 1 byte to 16 MiB written with random split points") {
  EventLoopGroup group(2);
  EchoServer server(group);
  std::mt19937 rng(42);
  for (std::size_t size : {std::size_t{1}, std::size_t{100}, std::size_t{65539},
                           std::size_t{1} << 20, std::size_t{16} << 20}) {
    CAPTURE(size);
    RawClient client(server.port);
    const std::string payload = random_bytes(size, static_cast<unsigned>(size));
    // Split points chosen up front so the writer thread needs no shared generator.
    std::vector<std::size_t> chunks;
    for (std::size_t left = size; left > 0;) {
      const std::size_t n = std::min<std::size_t>(left, 1 + rng() % 200'000);
      chunks.push_back(n);
      left -= n;
    }
    bool sent = false;
    std::thread writer([&] {
      std::size_t at = 0;
      sent = true;
      for (auto n : chunks) {
        sent = sent && client.send_all(std::string_view(payload).substr(at, n));
        at += n;
      }
    });
    const std::string echoed = client.recv_exact(size);
    writer.join();
    CHECK(sent);
    REQUIRE(echoed.size() == size);
    CHECK(echoed == payload);
  }
}

TEST_CASE("tcp echo serves 200 concurrent connections") {
  EventLoopGroup group(2);
  EchoServer server(group);
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 200; ++i) clients.push_back(std::make_unique<RawClient>(server.port));
  for (int i = 0; i < 200; ++i) {
    REQUIRE(clients[i]->send_all(random_bytes(1000, static_cast<unsigned>(i))));
  }
  for (int i = 0; i < 200; ++i) {
    CHECK(clients[i]->recv_exact(1000) == random_bytes(1000, static_cast<unsigned>(i)));
  }
}

TEST_CASE("a Bootstrap client echoes through the server and sees its addresses") {
  EventLoopGroup group(2);
  EchoServer server(group);
  const std::string payload = random_bytes(300'000, 7);
  auto collector = std::make_shared<CollectHandler>(payload.size());
  auto ch = connect_client(group, server.port, collector);
  CHECK(ch->is_active());
  CHECK(ch->remote_address()->port() == server.port);
  CHECK(ch->local_address()->ip() == "127.0.0.1");
  auto written = ch->new_promise();
  ch->write_and_flush(Message(to_buf(payload)), written);
  REQUIRE(written.future().wait_for(kWait));
  CHECK(written.is_success());
  REQUIRE(collector->done().wait_for(kWait));
  CHECK(collector->bytes() == payload);
  ch->close();
  REQUIRE(ch->close_future().wait_for(kWait));
  REQUIRE(collector->inactive().wait_for(kWait));
}

TEST_CASE("a Bootstrap client resolves localhost") {
  EventLoopGroup group(1);
  EchoServer server(group);
  auto collector = std::make_shared<CollectHandler>(5);
  auto ch = connect_client(group, server.port, collector, "localhost");
  ch->write_and_flush(Message(to_buf("hello")));
  REQUIRE(collector->done().wait_for(kWait));
  CHECK(collector->bytes() == "hello");
  ch->close();
  REQUIRE(ch->close_future().wait_for(kWait));
}

TEST_CASE("tcp echo works over IPv6 loopback") {
  int probe = ::socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_addr = in6addr_loopback;
  const bool has_v6 = probe >= 0 && ::bind(probe, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  if (probe >= 0) ::close(probe);
  if (!has_v6) {
    MESSAGE("no IPv6 loopback here; skipped");
    return;
  }
  EventLoopGroup group(1);
  EchoServer server(group, "::1");
  auto collector = std::make_shared<CollectHandler>(4);
  auto ch = connect_client(group, server.port, collector, "::1");
  CHECK(ch->remote_address()->kind() == SocketAddress::Kind::kIpv6);
  ch->write_and_flush(Message(to_buf("ping")));
  REQUIRE(collector->done().wait_for(kWait));
  CHECK(collector->bytes() == "ping");
  ch->close();
  REQUIRE(ch->close_future().wait_for(kWait));
}

TEST_CASE("connecting to a closed port fails with the errno text") {
  // A port that was just free: bind, read the port, close.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  EventLoopGroup group(1);
  auto f = Bootstrap()
               .group(group)
               .handler(std::make_shared<EchoHandler>())
               .connect("127.0.0.1", ntohs(sa.sin_port));
  REQUIRE(f.wait_for(kWait));
  REQUIRE_FALSE(f.is_success());
  try {
    std::rethrow_exception(f.cause());
  } catch (const IoError& e) {
    CHECK(e.code() == std::errc::connection_refused);
    CHECK(std::string(e.what()).find("refused") != std::string::npos);
  }
}
