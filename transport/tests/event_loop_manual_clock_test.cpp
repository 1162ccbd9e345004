// EventLoop under a ManualClock: scheduled tasks, sleep_for coroutines and periodic tasks on a
// real loop fire when the clock reaches their deadline, never a nanosecond before, with no real
// wait; the loop's coarse clock follows it; shutdown still ends on its own.
#include <doctest/doctest.h>

#include <atomic>
#include <vector>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

Task<std::int64_t> sleep_then_read_clock(EventLoop& loop, std::chrono::nanoseconds d) {
  co_await sleep_for(d);
  co_return loop.current_time_nanos();
}

}  // namespace

TEST_CASE("a manual clock is the loop's clock, fine and coarse") {
  auto clock = std::make_shared<ManualClock>(std::chrono::seconds(5));
  EventLoopGroup group(2, {.name = "vclock", .clock = clock});
  for (auto& loop : group) {
    CHECK(loop.manual_clock() == clock);
    CHECK(loop.current_time_nanos() == 5'000'000'000);
    CHECK(loop.coarse_time_nanos() == 5'000'000'000);
  }
  clock->advance_by(7ns);
  CHECK(group[1].current_time_nanos() == 5'000'000'007);
  CHECK(group[1].coarse_time_nanos() == 5'000'000'007);
  CHECK(group[0].name() == "vclock-0");
  EventLoopGroup plain(1);
  CHECK(plain[0].manual_clock() == nullptr);
}

TEST_CASE("the manual clock fires a scheduled task at its deadline, not a nanosecond before") {
  auto clock = std::make_shared<ManualClock>();
  EventLoopGroup group(1, {.clock = clock});
  auto& loop = group[0];
  std::atomic<int> ran{0};
  auto f = loop.schedule(100ms, [&ran] { ++ran; });
  settle(loop);
  REQUIRE(scheduled_count(loop) == 1);
  clock->advance_by(100ms - 1ns);
  settle(loop);
  CHECK(ran == 0);
  CHECK_FALSE(f.is_done());
  clock->advance_by(1ns);
  settle(loop);  // the advance's work ran before this: no waiting on the task itself
  CHECK(ran == 1);
  CHECK(f.is_success());
  CHECK(scheduled_count(loop) == 0);
}

TEST_CASE("the manual clock resumes a sleep_for coroutine on the loop at its deadline") {
  auto clock = std::make_shared<ManualClock>(std::chrono::seconds(1));
  EventLoopGroup group(1, {.clock = clock});
  auto& loop = group[0];
  auto woke = loop.spawn(sleep_then_read_clock(loop, 50ms));
  settle(loop);  // the task started and sleeps
  REQUIRE(scheduled_count(loop) == 1);
  clock->advance_by(50ms - 1ns);
  settle(loop);
  CHECK_FALSE(woke.is_done());
  clock->advance_by(1ns);
  REQUIRE(woke.wait_for(kWait));
  CHECK(woke.get() == 1'050'000'000);
}

TEST_CASE(
    "one advance over several deadlines runs them in order; tasks scheduled on the loop "
    "and already due run without an advance") {
  auto clock = std::make_shared<ManualClock>();
  EventLoopGroup group(1, {.clock = clock});
  auto& loop = group[0];
  std::vector<int> order;  // touched on the loop only
  auto c = loop.schedule(30ms, [&order] { order.push_back(3); });
  auto a = loop.schedule(10ms, [&order] { order.push_back(1); });
  auto b = loop.schedule(20ms, [&order] { order.push_back(2); });
  auto rate = loop.schedule_at_fixed_rate(5ms, 10ms, [&order] { order.push_back(0); });
  settle(loop);
  clock->advance_by(30ms);  // the fixed-rate task catches up: at 5, 15 and 25 ms
  settle(loop);
  rate.cancel();
  auto order_now = loop.submit([&order] { return order; });
  REQUIRE(order_now.wait_for(kWait));
  CHECK(order_now.get() == std::vector<int>{0, 1, 0, 2, 0, 3});
  // Scheduled from the loop with no delay: due at once, and the clock is not advanced.
  auto nested = loop.submit([&loop] { return loop.schedule(0ns, [] { return 42; }); });
  REQUIRE(nested.wait_for(kWait));
  auto due = nested.get();
  REQUIRE(due.wait_for(kWait));
  CHECK(due.get() == 42);
  CHECK(clock->now() == 30ms);
}

TEST_CASE("a loop on a manual clock shuts down gracefully without the clock moving") {
  auto clock = std::make_shared<ManualClock>();
  EventLoopGroup group(1, {.clock = clock});
  auto pending = group[0].schedule(1h, [] {});
  settle(group[0]);
  // The quiet period and timeout are real time: the loop ends by itself; the task is cancelled.
  REQUIRE(group.shutdown_gracefully(10ms, 5s).wait_for(kWait));
  CHECK(pending.is_cancelled());
  // The terminated loop (still subscribed until destroyed) refuses the advance's task quietly.
  clock->advance_by(2h);
  CHECK(clock->now() == 2h);
}
