// UniqueIpFilter shared by the child channels of a server on two loops, over loopback TCP: of
// clients that connect at once from 127.0.0.1, exactly one is accepted; closing it releases the
// IP for the next round. Run under TSan, it checks the shared set of IPs across loops.
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <vector>

#include <trellis/pipeline/channel_initializer.hpp>
#include <trellis/pipeline/unique_ip_filter.hpp>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

constexpr int kRounds = 3;
constexpr int kClients = 4;

// Greets each accepted child with "ok\n"; closed(round) completes when that round's accepted
// child (at most one at a time) becomes inactive.
class Greeter final : public ChannelInboundHandler {
 public:
  Greeter() : closed_(kRounds) {}
  bool is_sharable() const noexcept override { return true; }
  void channel_active(ChannelHandlerContext& ctx) override {
    current_ = accepted_.fetch_add(1);
    ctx.write_and_flush(to_buf("ok\n"));
    ctx.fire_channel_active();
  }
  void channel_inactive(ChannelHandlerContext& ctx) override {
    const int round = current_.load();
    if (round >= 0 && round < kRounds) closed_[static_cast<std::size_t>(round)].try_set_value();
    ctx.fire_channel_inactive();
  }
  void exception_caught(ChannelHandlerContext&, std::exception_ptr) override {}
  int accepted() const { return accepted_.load(); }
  Future<void> closed(int round) const { return closed_[static_cast<std::size_t>(round)].future(); }

 private:
  std::atomic<int> accepted_{0};
  std::atomic<int> current_{-1};
  std::vector<Promise<void>> closed_;
};

}  // namespace

TEST_CASE("UniqueIpFilter over TCP on two loops: one client per IP at a time, released on close") {
  auto filter = std::make_shared<UniqueIpFilter>();
  auto greeter = std::make_shared<Greeter>();
  EventLoopGroup server_loops(2);
  EventLoopGroup client_loops(2);
  auto bound = ServerBootstrap()
                   .group(server_loops)
                   .child_handler(ChannelInitializer::from([filter, greeter](Channel& ch) {
                     ch.pipeline().add_last(filter);
                     ch.pipeline().add_last(greeter);
                   }))
                   .bind("127.0.0.1", 0);
  REQUIRE(bound.wait_for(kWait));
  auto server = bound.get();
  const auto port = server->local_address()->port();

  for (int round = 0; round < kRounds; ++round) {
    CAPTURE(round);
    std::vector<std::shared_ptr<CollectHandler>> collectors;
    std::vector<std::shared_ptr<Channel>> clients;
    for (int i = 0; i < kClients; ++i) {
      collectors.push_back(std::make_shared<CollectHandler>(3));
      clients.push_back(connect_client(client_loops, port, collectors.back()));
    }
    // Every client either gets the greeting (stays open) or is closed without a byte.
    int greeted = -1;
    int refused = 0;
    for (int i = 0; i < kClients; ++i) {
      auto& c = *collectors[static_cast<std::size_t>(i)];
      const Future<void> done = c.done();
      const Future<void> inactive = c.inactive();
      const auto deadline = std::chrono::steady_clock::now() + kWait;
      bool greeting = false;
      for (;;) {
        if (done.wait_for(std::chrono::milliseconds(5))) {
          greeting = true;
          break;
        }
        if (inactive.wait_for(std::chrono::milliseconds(0))) break;
        REQUIRE(std::chrono::steady_clock::now() < deadline);
      }
      if (greeting) {
        CHECK(c.bytes() == "ok\n");
        CHECK(greeted == -1);
        greeted = i;
      } else {
        CHECK(c.bytes().empty());
        ++refused;
      }
    }
    REQUIRE(greeted >= 0);
    CHECK(refused == kClients - 1);
    CHECK(greeter->accepted() == round + 1);
    CHECK(filter->is_connected("127.0.0.1"));

    // Closing the greeted client releases 127.0.0.1 once the server side has closed too.
    clients[static_cast<std::size_t>(greeted)]->close();
    REQUIRE(greeter->closed(round).wait_for(kWait));
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t l = 0; l < 2; ++l) settle(server_loops[l]);
    }
    CHECK(filter->connected_count() == 0);
    for (auto& ch : clients) ch->close();
  }

  server->close();
  REQUIRE(server->close_future().wait_for(kWait));
}
