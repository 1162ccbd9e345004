// ChannelGroup over loopback TCP: server children that join a group in channel_active, a
// broadcast to clients on two loops, closing the whole group, and channels that close while the
// group broadcasts to them.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

// Adds each child to the group when it becomes active; `joined` completes at the n-th.
class JoinGroup final : public ChannelInboundHandler {
 public:
  JoinGroup(ChannelGroup& group, int expected) : group_(group), expected_(expected) {}
  bool is_sharable() const noexcept override { return true; }
  void channel_active(ChannelHandlerContext& ctx) override {
    group_.add(ctx.channel());
    if (++count_ == expected_) joined_.try_set_value();
    ctx.fire_channel_active();
  }
  void exception_caught(ChannelHandlerContext&, std::exception_ptr) override {}
  Future<void> joined() const { return joined_.future(); }

 private:
  ChannelGroup& group_;
  const int expected_;
  std::atomic<int> count_{0};
  Promise<void> joined_;
};

// Waits until every loop of `loops` has run what was queued before this call.
void drain(EventLoopGroup& loops, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) REQUIRE(loops[i].submit([] {}).wait_for(kWait));
}

std::vector<ChannelGroupError::Failure> failures_of(const Future<void>& f) {
  if (f.is_success()) return {};
  try {
    std::rethrow_exception(f.cause());
  } catch (const ChannelGroupError& e) {
    return e.failures();
  } catch (const std::exception& e) {
    FAIL("not a ChannelGroupError: " << e.what());
  }
  return {};
}

bool is_closed_channel_error(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const ClosedChannelError&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

TEST_CASE(
    "ChannelGroup over TCP: children join, a broadcast reaches every client, close ends all") {
  constexpr int kClients = 6;
  // Declared before the loops: the handlers use it until the loops are gone.
  ChannelGroup children("children");
  EventLoopGroup server_loops(2);
  EventLoopGroup client_loops(2);
  auto join = std::make_shared<JoinGroup>(children, kClients);
  auto bound = ServerBootstrap().group(server_loops).child_handler(join).bind("127.0.0.1", 0);
  REQUIRE(bound.wait_for(kWait));
  auto server = bound.get();
  const auto port = server->local_address()->port();

  const std::string payload = random_bytes(200'000, 7);
  std::vector<std::shared_ptr<CollectHandler>> collectors;
  std::vector<std::shared_ptr<Channel>> clients;
  for (int i = 0; i < kClients; ++i) {
    collectors.push_back(std::make_shared<CollectHandler>(payload.size()));
    clients.push_back(connect_client(client_loops, port, collectors.back()));
  }
  CHECK(&clients[0]->event_loop() != &clients[1]->event_loop());
  REQUIRE(join->joined().wait_for(kWait));
  CHECK(children.size() == kClients);

  // One buffer for all: each child gets a slice of the same storage.
  auto written = children.write_and_flush(Message(to_buf(payload)));
  REQUIRE(written.wait_for(kWait));
  CHECK(written.is_success());
  for (auto& c : collectors) {
    REQUIRE(c->done().wait_for(kWait));
    CHECK(c->bytes() == payload);
  }

  auto closed = children.close();
  REQUIRE(closed.wait_for(kWait));
  CHECK(closed.is_success());
  for (auto& c : collectors) REQUIRE(c->inactive().wait_for(kWait));
  drain(server_loops, 2);  // the last close's listeners have run
  CHECK(children.empty());

  server->close();
  REQUIRE(server->close_future().wait_for(kWait));
}

TEST_CASE("ChannelGroup over TCP: a group of clients on two loops, written and closed from here") {
  constexpr int kClients = 4;
  ChannelGroup clients("clients");
  EventLoopGroup loops(2);
  EchoServer server(loops);
  EventLoopGroup client_loops(2);
  std::vector<std::shared_ptr<CollectHandler>> collectors;
  for (int i = 0; i < kClients; ++i) {
    collectors.push_back(std::make_shared<CollectHandler>(5));
    auto ch = connect_client(client_loops, server.port, collectors.back());
    CHECK(clients.add(*ch));  // from Channel&: shared through its owner
  }
  CHECK(clients.size() == kClients);

  auto written = clients.write_and_flush(Message(to_buf("echo!")));
  REQUIRE(written.wait_for(kWait));
  CHECK(written.is_success());
  for (auto& c : collectors) {
    REQUIRE(c->done().wait_for(kWait));
    CHECK(c->bytes() == "echo!");
  }

  auto all_closed = clients.close_future();
  auto closed = clients.close();
  REQUIRE(closed.wait_for(kWait));
  CHECK(closed.is_success());
  REQUIRE(all_closed.wait_for(kWait));
  CHECK(all_closed.is_success());
  drain(client_loops, 2);
  CHECK(clients.empty());
}

TEST_CASE("ChannelGroup over TCP: channels that close during broadcasts fail only their writes") {
  constexpr int kClients = 8;
  constexpr int kBroadcasts = 40;
  ChannelGroup children("children");
  EventLoopGroup server_loops(2);
  EventLoopGroup client_loops(2);
  auto join = std::make_shared<JoinGroup>(children, kClients);
  auto bound = ServerBootstrap().group(server_loops).child_handler(join).bind("127.0.0.1", 0);
  REQUIRE(bound.wait_for(kWait));
  auto server = bound.get();

  std::vector<std::shared_ptr<CollectHandler>> collectors;
  std::vector<std::shared_ptr<Channel>> clients;
  for (int i = 0; i < kClients; ++i) {
    collectors.push_back(std::make_shared<CollectHandler>(kBroadcasts));
    clients.push_back(
        connect_client(client_loops, server->local_address()->port(), collectors.back()));
  }
  REQUIRE(join->joined().wait_for(kWait));
  auto members = children.channels();
  REQUIRE(members.size() == kClients);
  std::vector<std::shared_ptr<Channel>> closing(members.begin(), members.begin() + kClients / 2);

  // One thread broadcasts while another closes half of the members, one by one.
  std::vector<Future<void>> broadcasts;
  std::thread closer([&] {
    for (auto& ch : closing) ch->close();
  });
  for (int i = 0; i < kBroadcasts; ++i) {
    broadcasts.push_back(children.write_and_flush(Message(to_buf("x"))));
  }
  closer.join();

  for (auto& f : broadcasts) {
    REQUIRE(f.wait_for(kWait));
    for (const auto& failure : failures_of(f)) {
      const bool was_closed = std::any_of(closing.begin(), closing.end(), [&](const auto& ch) {
        return ch->id() == failure.channel;
      });
      CHECK(was_closed);
      CHECK(is_closed_channel_error(failure.error));
    }
  }
  for (auto& ch : closing) REQUIRE(ch->close_future().wait_for(kWait));
  drain(server_loops, 2);
  CHECK(children.size() == kClients - kClients / 2);
  // The members left open are the others, and their clients got every broadcast.
  for (auto& ch : children.channels()) {
    CHECK(std::none_of(closing.begin(), closing.end(), [&](const auto& c) { return c == ch; }));
    const auto peer_port = ch->remote_address()->port();
    std::size_t found = 0;
    for (std::size_t i = 0; i < clients.size(); ++i) {
      if (clients[i]->local_address()->port() != peer_port) continue;
      ++found;
      REQUIRE(collectors[i]->done().wait_for(kWait));
      CHECK(collectors[i]->bytes() == std::string(kBroadcasts, 'x'));
    }
    CHECK(found == 1);
  }

  auto closed = children.close();
  REQUIRE(closed.wait_for(kWait));
  CHECK(closed.is_success());
  server->close();
  REQUIRE(server->close_future().wait_for(kWait));
}

TEST_CASE("ChannelGroup over TCP: a group destroyed with members open leaves them working") {
  constexpr int kClients = 4;
  auto children = std::make_unique<ChannelGroup>("children");
  EventLoopGroup server_loops(2);
  EventLoopGroup client_loops(2);
  auto join = std::make_shared<JoinGroup>(*children, kClients);
  auto bound = ServerBootstrap().group(server_loops).child_handler(join).bind("127.0.0.1", 0);
  REQUIRE(bound.wait_for(kWait));
  auto server = bound.get();

  std::vector<std::shared_ptr<CollectHandler>> collectors;
  std::vector<std::shared_ptr<Channel>> clients;
  for (int i = 0; i < kClients; ++i) {
    collectors.push_back(std::make_shared<CollectHandler>(2));
    clients.push_back(
        connect_client(client_loops, server->local_address()->port(), collectors.back()));
  }
  REQUIRE(join->joined().wait_for(kWait));
  auto members = children->channels();
  REQUIRE(members.size() == kClients);
  children.reset();  // the members' close listeners now find the group gone

  for (auto& ch : members) {
    CHECK(ch->is_open());
    ch->write_and_flush(Message(to_buf("ok")));
  }
  for (auto& c : collectors) {
    REQUIRE(c->done().wait_for(kWait));
    CHECK(c->bytes() == "ok");
  }
  for (auto& ch : clients) ch->close();
  for (auto& ch : members) REQUIRE(ch->close_future().wait_for(kWait));
  server->close();
  REQUIRE(server->close_future().wait_for(kWait));
}
