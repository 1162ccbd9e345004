// SocketChannel state kept only while needed: the connect state (promise, timeout, requested
// address) exists from connect until it completes, and accepted channels share their server's
// child options instead of each holding a copy.
#include <doctest/doctest.h>

#include <mutex>
#include <thread>
#include <vector>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

// A listener whose accept queue is full: a connect to it hangs until it times out.
struct FullListener {
  FullListener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
    REQUIRE(::listen(fd, 0) == 0);
    socklen_t len = sizeof sa;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    port = ntohs(sa.sin_port);
    for (int i = 0; i < 8; ++i) {
      const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      ::connect(c, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
      fillers.push_back(c);
    }
    std::this_thread::sleep_for(50ms);
  }
  ~FullListener() {
    for (int c : fillers) ::close(c);
    ::close(fd);
  }
  int fd = -1;
  std::uint16_t port = 0;
  std::vector<int> fillers;
};

std::shared_ptr<SocketChannel> registered_client(EventLoopGroup& group,
                                                 std::chrono::milliseconds connect_timeout) {
  auto ch = SocketChannel::create(group.next());
  ch->config().set_connect_timeout(connect_timeout);
  auto registered = ch->register_channel();
  REQUIRE(registered.wait_for(kWait));
  REQUIRE(registered.is_success());
  return ch;
}

// Records the accepted channels.
class ChildRecorder final : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
  void channel_active(ChannelHandlerContext& ctx) override {
    auto* child = dynamic_cast<SocketChannel*>(&ctx.channel());
    REQUIRE(child != nullptr);
    std::lock_guard lock(mutex);
    children.push_back(child->shared_from_this());
    ctx.fire_channel_active();
  }
  std::mutex mutex;
  std::vector<std::shared_ptr<SocketChannel>> children;
};

}  // namespace

TEST_CASE(
    "a connect that hangs times out at its deadline on the loop's clock and closes the "
    "channel") {
  FullListener listener;
  auto clock = std::make_shared<ManualClock>();
  EventLoopGroup group(1, {.clock = clock});
  auto ch = registered_client(group, 200ms);
  auto p = ch->new_promise();
  ch->connect(SocketAddress::from_ip("127.0.0.1", listener.port), p);
  settle(group[0]);  // the connect ran: it hangs, its timeout armed at 200 ms
  REQUIRE(scheduled_count(group[0]) == 1);
  clock->advance_by(200ms - 1ns);
  settle(group[0]);
  CHECK_FALSE(p.is_done());
  CHECK(ch->is_open());
  clock->advance_by(1ns);
  REQUIRE(p.future().wait_for(kWait));
  REQUIRE_FALSE(p.is_success());
  CHECK_THROWS_AS(std::rethrow_exception(p.future().cause()), ConnectTimeoutError);
  CHECK(ch->close_future().wait_for(kWait));
  CHECK_FALSE(ch->is_open());
}

TEST_CASE("closing a channel while it connects fails the connect and cancels its timeout") {
  FullListener listener;
  auto clock = std::make_shared<ManualClock>();
  EventLoopGroup group(1, {.clock = clock});
  auto ch = registered_client(group, 200ms);
  auto p = ch->new_promise();
  ch->connect(SocketAddress::from_ip("127.0.0.1", listener.port), p);
  settle(group[0]);
  REQUIRE(scheduled_count(group[0]) == 1);
  CHECK_FALSE(p.is_done());
  ch->close();
  REQUIRE(p.future().wait_for(kWait));
  CHECK_THROWS_AS(std::rethrow_exception(p.future().cause()), ClosedChannelError);
  CHECK(ch->close_future().wait_for(kWait));
  CHECK(scheduled_count(group[0]) == 0);  // the timeout was cancelled
  clock->advance_by(1s);                  // past it: nothing fires
  settle(group[0]);
  CHECK_FALSE(ch->is_open());
}

TEST_CASE("a connected client can connect only once and still closes cleanly") {
  auto clock = std::make_shared<ManualClock>();
  EventLoopGroup group(1, {.clock = clock});
  EchoServer server(group);
  auto ch = registered_client(group, 1000ms);
  auto p = ch->new_promise();
  ch->connect(SocketAddress::from_ip("127.0.0.1", server.port), p);
  REQUIRE(p.future().wait_for(kWait));
  REQUIRE(p.is_success());
  CHECK(ch->is_active());
  CHECK(ch->remote_address()->port() == server.port);
  CHECK(scheduled_count(group[0]) == 0);  // connected: the timeout was cancelled
  auto again = ch->new_promise();
  ch->connect(SocketAddress::from_ip("127.0.0.1", server.port), again);
  REQUIRE(again.future().wait_for(kWait));
  CHECK_THROWS_AS(std::rethrow_exception(again.future().cause()), IllegalStateError);
  clock->advance_by(1200ms);  // past the (cancelled) timeout: still connected
  settle(group[0]);
  CHECK(ch->is_active());
  ch->close();
  CHECK(ch->close_future().wait_for(kWait));
}

TEST_CASE("accepted channels all get the server's child options") {
  EventLoopGroup group(2);
  auto recorder = std::make_shared<ChildRecorder>();
  auto bound = ServerBootstrap()
                   .group(group)
                   .child_option(channel_option::allow_half_closure, true)
                   .child_option(channel_option::max_messages_per_read, 3)
                   .child_handler(recorder)
                   .bind("127.0.0.1", 0);
  REQUIRE(bound.wait_for(kWait));
  REQUIRE(bound.is_success());
  auto server = bound.get();
  {
    RawClient a(server->local_address()->port());
    RawClient b(server->local_address()->port());
    RawClient c(server->local_address()->port());
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard lock(recorder->mutex);
        if (recorder->children.size() == 3) break;
      }
      std::this_thread::sleep_for(10ms);
    }
    std::lock_guard lock(recorder->mutex);
    REQUIRE(recorder->children.size() == 3);
    for (auto& child : recorder->children) {
      CHECK(child->allow_half_closure());
      CHECK(child->config().max_messages_per_read() == 3);
    }
  }
  for (auto& child : recorder->children) {
    child->close();
    CHECK(child->close_future().wait_for(kWait));
  }
  server->close();
  CHECK(server->close_future().wait_for(kWait));
}
