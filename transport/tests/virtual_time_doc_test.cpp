// The example of docs/testing.md "Virtual time on real loops", compiled and run as it appears
// there.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>

#include <trellis/transport.hpp>

using namespace std::chrono_literals;

TEST_CASE("docs: a manual clock drives a sleeping task on a real loop") {
  // --- docs/testing.md: "Virtual time on real loops" -----------------------------------------
  auto clock = std::make_shared<trellis::ManualClock>();
  trellis::EventLoopGroup group(1, {.clock = clock});
  trellis::EventLoop& loop = group[0];
  auto reply = loop.spawn([]() -> trellis::Task<int> {
    co_await trellis::sleep_for(1h);
    co_return 42;
  }());
  loop.submit([] {}).get();  // the task has started: it sleeps
  clock->advance_by(1h - 1ns);
  loop.submit([] {}).get();      // the loop has run what the advance made due
  CHECK_FALSE(reply.is_done());  // not 1 ns early
  clock->advance_by(1ns);
  CHECK(reply.get() == 42);  // at once: no hour of wall time
}
