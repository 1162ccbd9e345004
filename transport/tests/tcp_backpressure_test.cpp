// Flow control over loopback: water marks with a slow reader, auto_read=false + read(), and
// the allocation budget of an echoed message in steady state.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include <trellis/testing/allocation_counter.hpp>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

// A listening raw socket on 127.0.0.1 with a small receive buffer; accept() in the test.
struct RawListener {
  RawListener(int backlog = 16, int rcvbuf = 0) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
    REQUIRE(::listen(fd, backlog) == 0);
    socklen_t len = sizeof sa;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    port = ntohs(sa.sin_port);
  }
  ~RawListener() { ::close(fd); }
  int accept_one() {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10'000) != 1) return -1;
    const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c >= 0) {
      timeval tv{10, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    return c;
  }
  int fd;
  std::uint16_t port;
};

// Writes 16 KiB buffers while the channel is writable until `total` bytes are queued, and
// records the largest outbound backlog and the writability changes.
class PumpHandler final : public ChannelInboundHandler {
 public:
  static constexpr std::size_t kChunk = 16 * 1024;
  explicit PumpHandler(std::size_t total) : total_(total) {}
  void channel_active(ChannelHandlerContext& ctx) override {
    pump(ctx);
    ctx.fire_channel_active();
  }
  void channel_writability_changed(ChannelHandlerContext& ctx) override {
    if (ctx.channel().is_writable()) {
      ++writable_events;
      pump(ctx);
    } else {
      ++unwritable_events;
    }
  }
  std::atomic<int> writable_events{0};
  std::atomic<int> unwritable_events{0};
  std::atomic<std::size_t> max_pending{0};
  std::atomic<std::size_t> queued{0};

 private:
  void pump(ChannelHandlerContext& ctx) {
    auto* out = ctx.channel().unsafe().outbound_buffer();
    while (out && ctx.channel().is_writable() && queued < total_) {
      ctx.write_and_flush(Message(to_buf(random_bytes(kChunk, 3))));
      queued += kChunk;
      max_pending = std::max(max_pending.load(), out->total_pending_write_bytes());
    }
  }
  std::size_t total_;
};

}  // namespace

TEST_CASE(
    "a slow reader makes the writer unwritable, then writable again, without unbounded buffering") {
  RawListener listener(16, 8 * 1024);
  EventLoopGroup group(1);
  constexpr std::size_t kTotal = 4 << 20;
  constexpr std::size_t kHigh = 64 * 1024;
  auto pump = std::make_shared<PumpHandler>(kTotal);
  auto f =
      Bootstrap()
          .group(group)
          .option(channel_option::so_sndbuf, 8 * 1024)
          .option(channel_option::write_buffer_water_mark, WriteBufferWaterMark{32 * 1024, kHigh})
          .handler(pump)
          .connect("127.0.0.1", listener.port);
  const int peer = listener.accept_one();
  REQUIRE(peer >= 0);
  REQUIRE(f.wait_for(kWait));
  REQUIRE(f.is_success());
  // Let the writer fill every buffer before the peer starts reading.
  for (int i = 0; i < 200 && pump->unwritable_events == 0; ++i) std::this_thread::sleep_for(5ms);
  CHECK(pump->unwritable_events >= 1);
  std::size_t received = 0;
  std::vector<char> buf(64 * 1024);
  while (received < kTotal) {
    const ssize_t n = ::recv(peer, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    received += static_cast<std::size_t>(n);
  }
  CHECK(received == kTotal);
  CHECK(pump->writable_events >= 1);
  CHECK(pump->max_pending <= kHigh + PumpHandler::kChunk);
  ::close(peer);
  f.get()->close();
  REQUIRE(f.get()->close_future().wait_for(kWait));
}

TEST_CASE("auto_read=false reads nothing until read() is called") {
  EventLoopGroup group(1);
  auto collector = std::make_shared<CollectHandler>(5);
  Promise<std::shared_ptr<Channel>> accepted;
  auto init = ChannelInitializer::from([collector, accepted](Channel& ch) mutable {
    ch.pipeline().add_last(collector);
    accepted.try_set_value(static_cast<SocketChannel&>(ch).shared_from_this());
  });
  auto bound = ServerBootstrap()
                   .group(group)
                   .child_option(channel_option::auto_read, false)
                   .child_handler(init)
                   .bind("127.0.0.1", 0);
  REQUIRE(bound.wait_for(kWait));
  auto server = bound.get();
  RawClient client(server->local_address()->port());
  REQUIRE(client.send_all("hello"));
  REQUIRE(accepted.future().wait_for(kWait));
  auto child = accepted.future().get();
  std::this_thread::sleep_for(100ms);
  CHECK(collector->bytes().empty());
  child->read();
  REQUIRE(collector->done().wait_for(kWait));
  CHECK(collector->bytes() == "hello");
  server->close();
  REQUIRE(server->close_future().wait_for(kWait));
}

TEST_CASE("an echoed message allocates nothing in steady state") {
  if (!testing::allocation_hook_installed()) {
    MESSAGE("allocation hook not linked; skipped");
    return;
  }
  EventLoopGroup group(1);
  EchoServer server(group);
  RawClient client(server.port);
  const std::string msg = random_bytes(64, 9);
  // No std::string temporaries here: the count covers every thread, this one included.
  auto round_trips = [&](int n) {
    char buf[64];
    for (int i = 0; i < n; ++i) {
      if (::send(client.fd(), msg.data(), msg.size(), MSG_NOSIGNAL) != 64) return false;
      std::size_t got = 0;
      while (got < sizeof buf) {
        const ssize_t r = ::recv(client.fd(), buf + got, sizeof buf - got, 0);
        if (r <= 0) return false;
        got += static_cast<std::size_t>(r);
      }
      if (std::memcmp(buf, msg.data(), sizeof buf) != 0) return false;
    }
    return true;
  };
  REQUIRE(round_trips(2000));  // warm the pools and Asio's handler caches
  const auto before = testing::total_allocations();
  REQUIRE(round_trips(2000));
  const auto allocations = testing::total_allocations() - before;
  MESSAGE("allocations over 2000 echoed messages: " << allocations);
  CHECK(allocations == 0);
}
