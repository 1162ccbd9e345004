// Tests of EmbeddedEventLoop: nothing runs by itself, scheduled tasks and the controllable clock.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>
#include <vector>

#include <trellis/pipeline/awaitables.hpp>
#include <trellis/testing/embedded_event_loop.hpp>

using namespace trellis;
using namespace std::chrono_literals;

TEST_CASE("the embedded loop runs queued tasks only when asked, including tasks they queue") {
  EmbeddedEventLoop loop;
  std::vector<int> order;
  loop.execute([&] {
    order.push_back(1);
    loop.execute([&] { order.push_back(3); });
  });
  loop.execute([&] { order.push_back(2); });
  CHECK(order.empty());
  CHECK(loop.pending_task_count() == 2);
  CHECK(loop.run_pending_tasks() == 3);
  CHECK(order == std::vector<int>{1, 2, 3});
  CHECK(loop.in_event_loop());
}

TEST_CASE("run_scheduled_pending_tasks runs what is due and returns the next deadline or -1") {
  EmbeddedEventLoop loop;
  loop.freeze_time();
  const auto now = loop.current_time_nanos();
  int ran = 0;
  loop.schedule(0ns, [&] { ++ran; });
  loop.schedule(10ns, [&] { ++ran; });
  CHECK(loop.run_scheduled_pending_tasks() == now + 10);
  CHECK(ran == 1);
  loop.advance_by(10ns);
  CHECK(ran == 2);
  CHECK(loop.run_scheduled_pending_tasks() == -1);
}

TEST_CASE("advance_by runs due tasks in deadline order, each at its own deadline") {
  EmbeddedEventLoop loop;
  loop.freeze_time();
  const auto t0 = loop.current_time_nanos();
  std::vector<std::int64_t> seen;
  loop.schedule(30ms, [&] { seen.push_back(loop.current_time_nanos() - t0); });
  loop.schedule(10ms, [&] {
    seen.push_back(loop.current_time_nanos() - t0);
    // Scheduled inside the window: runs in this advance too, at its own deadline.
    loop.schedule(5ms, [&] { seen.push_back(loop.current_time_nanos() - t0); });
  });
  loop.schedule(50ms, [&] { seen.push_back(-1); });
  loop.advance_by(40ms);
  CHECK(seen == std::vector<std::int64_t>{10'000'000, 15'000'000, 30'000'000});
  CHECK(loop.current_time_nanos() - t0 == 40'000'000);
}

TEST_CASE("a scheduled task fires exactly at its deadline, not 1 ns before") {
  EmbeddedEventLoop loop;
  loop.freeze_time();
  bool fired = false;
  auto f = loop.schedule(1s, [&] { fired = true; });
  loop.advance_by(1s - 1ns);
  CHECK_FALSE(fired);
  CHECK(f.delay_nanos() == 1);
  loop.advance_by(1ns);
  CHECK(fired);
  CHECK(f.is_success());
}

TEST_CASE("frozen time does not move; unfrozen it flows on from the frozen value") {
  EmbeddedEventLoop loop;
  loop.freeze_time();
  CHECK(loop.is_time_frozen());
  const auto t0 = loop.current_time_nanos();
  std::this_thread::sleep_for(2ms);
  loop.execute([] {});
  loop.run_pending_tasks();
  CHECK(loop.current_time_nanos() == t0);
  loop.advance_by(1h);
  CHECK(loop.current_time_nanos() == t0 + std::chrono::nanoseconds(1h).count());
  loop.unfreeze_time();
  const auto t1 = loop.current_time_nanos();
  CHECK(t1 >= t0 + std::chrono::nanoseconds(1h).count());
  std::this_thread::sleep_for(1ms);
  CHECK(loop.current_time_nanos() > t1);
}

TEST_CASE("a fixed-rate task catches up after a clock jump") {
  EmbeddedEventLoop loop;
  loop.freeze_time();
  int runs = 0;
  auto f = loop.schedule_at_fixed_rate(10ms, 10ms, [&] { ++runs; });
  loop.advance_by(55ms);
  CHECK(runs == 5);
  f.cancel();
  loop.advance_by(100ms);
  CHECK(runs == 5);
}

TEST_CASE("a spawned task sleeping 1s resumes on advance_by(1s)") {
  EmbeddedEventLoop loop;
  loop.freeze_time();
  int stage = 0;
  auto body = [&]() -> Task<void> {
    stage = 1;
    co_await sleep_for(1s);
    stage = 2;
  };
  auto f = loop.spawn(body());
  CHECK(stage == 0);
  loop.run_pending_tasks();
  CHECK(stage == 1);
  loop.advance_by(1s);
  CHECK(stage == 2);
  CHECK(f.is_success());
}

TEST_CASE("cancel_scheduled_tasks cancels every scheduled task") {
  EmbeddedEventLoop loop;
  auto a = loop.schedule(1s, [] {});
  auto b = loop.schedule(2s, [] {});
  loop.cancel_scheduled_tasks();
  CHECK(a.is_cancelled());
  CHECK(b.is_cancelled());
  CHECK(loop.scheduled_task_count() == 0);
}

TEST_CASE("the coarse clock of the embedded loop is its test clock") {
  EmbeddedEventLoop loop;
  loop.freeze_time();
  const std::int64_t frozen = loop.current_time_nanos();
  CHECK(loop.coarse_time_nanos() == frozen);
  loop.advance_by(std::chrono::milliseconds(1500));
  CHECK(loop.coarse_time_nanos() == frozen + 1'500'000'000);
}
