// Accepting over loopback: what an accepted channel knows of its addresses, accept batches that
// end before the backlog is empty, and writes made while a reset connection is reported.
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <vector>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

// Keeps each accepted channel and counts them.
struct Children {
  std::mutex mutex;
  std::vector<std::shared_ptr<Channel>> channels;
  std::atomic<int> active{0};
  Promise<void> all;
  int expected = 1;
};

std::shared_ptr<ChannelHandler> keep_children(const std::shared_ptr<Children>& children) {
  return ChannelInitializer::from([children](Channel& ch) {
    std::lock_guard lock(children->mutex);
    children->channels.push_back(static_cast<SocketChannel&>(ch).shared_from_this());
    if (++children->active == children->expected) children->all.try_set_value();
  });
}

SocketAddress local_of(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0);
  return SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len);
}

}  // namespace

TEST_CASE("an accepted channel has the listener's local address and the client's as remote") {
  EventLoopGroup group(1);
  auto children = std::make_shared<Children>();
  auto bound =
      ServerBootstrap().group(group).child_handler(keep_children(children)).bind("127.0.0.1", 0);
  REQUIRE(bound.wait_for(kWait));
  const SocketAddress listening = *bound.get()->local_address();
  RawClient client(listening.port());
  REQUIRE(children->all.future().wait_for(kWait));
  const auto child = children->channels.at(0);
  CHECK(child->local_address() == listening);
  CHECK(child->remote_address() == local_of(client.fd()));
  bound.get()->close();
  REQUIRE(bound.get()->close_future().wait_for(kWait));
}

TEST_CASE("a channel accepted on a wildcard listener has the address the client reached") {
  EventLoopGroup group(1);
  auto children = std::make_shared<Children>();
  auto bound =
      ServerBootstrap().group(group).child_handler(keep_children(children)).bind("0.0.0.0", 0);
  REQUIRE(bound.wait_for(kWait));
  const std::uint16_t port = bound.get()->local_address()->port();
  RawClient client(port);  // to 127.0.0.1
  REQUIRE(children->all.future().wait_for(kWait));
  const auto child = children->channels.at(0);
  CHECK(child->local_address() == SocketAddress::from_ip("127.0.0.1", port));
  CHECK(child->remote_address() == local_of(client.fd()));
  bound.get()->close();
  REQUIRE(bound.get()->close_future().wait_for(kWait));
}

TEST_CASE("accepting one connection per wake-up still accepts every pending connection") {
  EventLoopGroup group(1);
  auto children = std::make_shared<Children>();
  children->expected = 6;
  // The loop is kept busy while the clients connect, so all of them wait in the backlog and
  // one readiness edge announces them all.
  Promise<void> release;
  Promise<void> busy;
  auto bound = ServerBootstrap()
                   .group(group)
                   .option(channel_option::max_messages_per_read, 1)
                   .child_handler(keep_children(children))
                   .bind("127.0.0.1", 0);
  REQUIRE(bound.wait_for(kWait));
  group.next().execute([&] {
    busy.try_set_value();
    (void)release.future().wait_for(kWait);
  });
  REQUIRE(busy.future().wait_for(kWait));
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < children->expected; ++i) {
    clients.push_back(std::make_unique<RawClient>(bound.get()->local_address()->port()));
  }
  release.try_set_value();
  REQUIRE(children->all.future().wait_for(kWait));
  CHECK(children->active == children->expected);
  bound.get()->close();
  REQUIRE(bound.get()->close_future().wait_for(kWait));
}

TEST_CASE("what a handler writes while a reset is reported fails with the read error, unsent") {
  struct AnswerErrors final : ChannelInboundHandler {
    void channel_read(ChannelHandlerContext&, Message) override { read.try_set_value(); }
    void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) override {
      reported = error;
      written = ctx.new_promise();
      ctx.write_and_flush(Message(to_buf("too late")), written);
      ctx.close();
    }
    bool is_sharable() const noexcept override { return true; }
    Promise<void> read;
    std::exception_ptr reported;
    ChannelPromise written;
  };
  EventLoopGroup group(1);
  auto handler = std::make_shared<AnswerErrors>();
  Promise<std::shared_ptr<Channel>> child;
  auto bound = ServerBootstrap()
                   .group(group)
                   .child_handler(ChannelInitializer::from([handler, child](Channel& ch) mutable {
                     ch.pipeline().add_last(handler);
                     child.try_set_value(static_cast<SocketChannel&>(ch).shared_from_this());
                   }))
                   .bind("127.0.0.1", 0);
  REQUIRE(bound.wait_for(kWait));
  {
    RawClient client(bound.get()->local_address()->port());
    REQUIRE(client.send_all("x"));
    REQUIRE(handler->read.future().wait_for(kWait));
    client.reset();
  }
  REQUIRE(child.future().wait_for(kWait));
  REQUIRE(child.future().get()->close_future().wait_for(kWait));
  group.next().submit([] {}).wait();  // the handler's fields were written on the loop
  REQUIRE(handler->reported);
  REQUIRE(handler->written.future().wait_for(kWait));
  CHECK_FALSE(handler->written.is_success());
  // The same error object: the write was failed with the read's error, not tried.
  CHECK(handler->written.future().cause() == handler->reported);
  try {
    std::rethrow_exception(handler->reported);
  } catch (const IoError& e) {
    CHECK(std::string(e.what()).find("read") != std::string::npos);
  }
  bound.get()->close();
  REQUIRE(bound.get()->close_future().wait_for(kWait));
}
