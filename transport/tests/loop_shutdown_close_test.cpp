// A loop shutting down closes its channels once, in a shutdown hook: work that arrives after
// that hook (another hook, a late registration) still runs or is refused, and no channel is left
// registered, open and holding itself alive (LeakSanitizer sees such a channel as a leak).
#include <doctest/doctest.h>

#include <atomic>
#include <memory>

#include <trellis/pipeline/error.hpp>
#include <trellis/transport/event_loop.hpp>
#include <trellis/transport/socket_channel.hpp>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

TEST_CASE("a shutdown hook added while the hooks run still runs before the loop stops") {
  EventLoop loop;
  std::atomic<bool> outer{false};
  std::atomic<bool> inner{false};
  loop.on_shutdown([&] {
    outer = true;
    loop.on_shutdown([&] { inner = true; });
  });
  REQUIRE(loop.shutdown_gracefully(0s, 0s).wait_for(kWait));
  CHECK(outer.load());
  CHECK(inner.load());
}

TEST_CASE("a channel registering after its loop closed its channels is refused and closed") {
  EventLoop loop;
  // The first registration installs the loop's close-every-channel hook; the test's hook comes
  // after it, so the second registration runs once the channels were closed.
  auto first = SocketChannel::create(loop);
  REQUIRE(first->register_channel().wait_for(kWait));
  auto late = SocketChannel::create(loop);
  std::shared_ptr<Future<void>> late_registered = std::make_shared<Future<void>>();
  loop.on_shutdown([late, late_registered] { *late_registered = late->register_channel(); });

  REQUIRE(loop.shutdown_gracefully(0s, 0s).wait_for(kWait));
  CHECK_FALSE(first->is_open());
  CHECK_FALSE(first->is_registered());
  REQUIRE(late_registered->is_done());
  CHECK_FALSE(late_registered->is_success());
  CHECK_THROWS_AS(late_registered->get(), RejectedExecutionError);
  CHECK_FALSE(late->is_open());
  CHECK_FALSE(late->is_registered());
}
