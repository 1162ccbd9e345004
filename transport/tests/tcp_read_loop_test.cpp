// The read loop over an edge-triggered reactor: data left in the socket when a wake-up stops
// early (read limit, reading switched off) must still be read without a new edge from the peer.
#include <doctest/doctest.h>

#include <future>
#include <thread>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;
using namespace std::chrono_literals;

namespace {

template <class Cond>
bool eventually(Cond cond) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

struct Accepted {
  std::shared_ptr<Channel> server;
  Future<std::shared_ptr<Channel>> child;
};

Accepted serve(EventLoopGroup& group, std::shared_ptr<CollectHandler> collector,
               ChannelOptions child_options) {
  Promise<std::shared_ptr<Channel>> accepted;
  auto init = ChannelInitializer::from([collector, accepted](Channel& ch) mutable {
    ch.pipeline().add_last(collector);
    accepted.try_set_value(static_cast<SocketChannel&>(ch).shared_from_this());
  });
  ServerBootstrap bootstrap;
  bootstrap.group(group).child_handler(init);
  if (child_options.max_messages_per_read) {
    bootstrap.child_option(channel_option::max_messages_per_read,
                           *child_options.max_messages_per_read);
  }
  auto bound = bootstrap.bind("127.0.0.1", 0);
  REQUIRE(bound.wait_for(kWait));
  return {bound.get(), accepted.future()};
}

}  // namespace

TEST_CASE("one read per wake-up still reads everything the peer sent before it went quiet") {
  EventLoopGroup group(1);
  constexpr std::size_t kSize = 1 << 20;
  auto collector = std::make_shared<CollectHandler>(kSize);
  ChannelOptions options;
  options.max_messages_per_read = 1;
  auto [server, child] = serve(group, collector, options);
  RawClient client(server->local_address()->port());
  const std::string payload = random_bytes(kSize, 7);
  // All of it is sent, then the peer waits: only the server's own follow-up reads can finish.
  REQUIRE(client.send_all(payload));
  REQUIRE(collector->done().wait_for(kWait));
  CHECK(collector->bytes() == payload);
  server->close();
  REQUIRE(server->close_future().wait_for(kWait));
}

TEST_CASE("data that arrives while reading is switched off is read after read()") {
  EventLoopGroup group(1);
  auto collector = std::make_shared<CollectHandler>(6);
  auto [server, child_future] = serve(group, collector, {});
  RawClient client(server->local_address()->port());
  REQUIRE(client.send_all("abc"));
  REQUIRE(child_future.wait_for(kWait));
  auto child = child_future.get();
  // Reading is on and waiting for the next edge when auto_read goes off.
  REQUIRE(eventually([&] { return collector->bytes() == "abc"; }));
  auto off = child->event_loop().submit([&] { child->config().set_auto_read(false); });
  REQUIRE(off.wait_for(kWait));
  REQUIRE(client.send_all("def"));  // this edge finds nobody who wants to read
  std::this_thread::sleep_for(100ms);
  CHECK(collector->bytes() == "abc");
  child->read();  // the peer sends nothing more: no new edge will come
  REQUIRE(collector->done().wait_for(kWait));
  CHECK(collector->bytes() == "abcdef");
  server->close();
  REQUIRE(server->close_future().wait_for(kWait));
}

TEST_CASE("a FIN that arrives together with the last bytes is seen after a short read") {
  EventLoopGroup group(1);
  auto collector = std::make_shared<CollectHandler>(1);
  auto [server, child_future] = serve(group, collector, {});
  RawClient client(server->local_address()->port());
  REQUIRE(child_future.wait_for(kWait));
  auto child = child_future.get();
  // Hold the loop while the byte and the FIN arrive, so that one wake-up announces both: the
  // read of "x" is short, and no later edge will tell of the end of the stream.
  std::promise<void> gate;
  std::promise<void> holding;
  child->event_loop().execute([&] {
    holding.set_value();
    gate.get_future().wait();
  });
  holding.get_future().wait();
  REQUIRE(client.send_all("x"));
  client.shutdown_write();
  gate.set_value();
  REQUIRE(collector->done().wait_for(kWait));
  CHECK(collector->bytes() == "x");
  CHECK(child->close_future().wait_for(kWait));  // without half-closure, the FIN closes it
  server->close();
  REQUIRE(server->close_future().wait_for(kWait));
}
