// A thread that holds a channel may keep calling the contexts of its handlers after the channel
// closed: the operations are posted to the loop, walk the pipeline the close took apart, and
// fail with ClosedChannelError instead of touching freed contexts.
#include <doctest/doctest.h>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

// Passes writes on; sits between the head and the handler whose context the test keeps.
class PassOutbound final : public ChannelOutboundHandler {};

class KeepsContext final : public ChannelInboundHandler {
 public:
  void handler_added(ChannelHandlerContext& ctx) override { context = &ctx; }
  std::atomic<ChannelHandlerContext*> context{nullptr};
};

}  // namespace

TEST_CASE("writes posted from another thread after the close fail with ClosedChannelError") {
  EventLoopGroup group(1);
  EchoServer server(group);
  auto keeper = std::make_shared<KeepsContext>();
  auto init = ChannelInitializer::from([keeper](Channel& ch) {
    ch.pipeline().add_last("pass", std::make_shared<PassOutbound>()).add_last("keep", keeper);
  });
  std::shared_ptr<Channel> client = connect_client(group, server.port, init);
  ChannelHandlerContext* ctx = keeper->context.load();
  REQUIRE(ctx != nullptr);

  client->close();
  REQUIRE(client->close_future().wait_for(kWait));
  // The close took the handlers out (after unregistering, on the loop); wait for it there.
  bool removed = false;
  for (int i = 0; i < 1000 && !removed; ++i) {
    auto f = client->event_loop().submit([ctx] { return ctx->is_removed(); });
    REQUIRE(f.wait_for(kWait));
    removed = f.get();
    if (!removed) std::this_thread::sleep_for(1ms);
  }
  REQUIRE(removed);
  // Let every clean-up task the close queued run before the writes go in.
  REQUIRE(client->event_loop().submit([] {}).wait_for(kWait));

  std::vector<Future<void>> writes;
  for (int i = 0; i < 100; ++i) {
    auto p = ChannelPromise::make(&client->event_loop());
    writes.push_back(p.future());
    ctx->write_and_flush(Message(to_buf("late")), std::move(p));
  }
  for (auto& f : writes) {
    REQUIRE(f.wait_for(kWait));
    CHECK_THROWS_AS(f.get(), ClosedChannelError);
  }
  client.reset();
}
