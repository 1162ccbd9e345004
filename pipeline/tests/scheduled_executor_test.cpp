#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include <trellis/pipeline.hpp>
#include <trellis/testing.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {
// An executor whose clock is whatever the test sets: proves that every deadline and delay is
// computed from current_time_nanos().
class ManualClockExecutor final : public AbstractScheduledEventExecutor {
 public:
  std::int64_t now = 1'000'000;
  std::vector<UniqueFunction<void()>> tasks;

  void execute(UniqueFunction<void()> fn) override { tasks.push_back(std::move(fn)); }
  bool in_event_loop() const override { return true; }
  std::int64_t current_time_nanos() const override { return now; }
  Future<void> termination_future() override { return termination_.future(); }
  bool is_shutting_down() const override { return false; }
  bool is_terminated() const override { return false; }
  std::size_t run_due() { return run_due_scheduled_tasks(now); }
  std::int64_t next_deadline() const { return next_scheduled_deadline(); }

 protected:
  Future<void> do_shutdown_gracefully(std::chrono::nanoseconds, std::chrono::nanoseconds) override {
    cancel_scheduled_tasks();
    termination_.try_set_value();
    return termination_.future();
  }

 private:
  Promise<void> termination_;
};
}  // namespace

TEST_CASE("deadline_nanos and delay_nanos follow an overridden clock") {
  ManualClockExecutor ex;
  auto f = ex.schedule(5s, [] {});
  CHECK(f.deadline_nanos() == 1'000'000 + 5'000'000'000);
  CHECK(f.delay_nanos() == 5'000'000'000);
  ex.now += 2'000'000'000;
  CHECK(f.delay_nanos() == 3'000'000'000);
  ex.now += 10'000'000'000;
  CHECK(f.delay_nanos() == 0);
}

TEST_CASE("a scheduled task runs when the clock reaches its deadline, not before") {
  ManualClockExecutor ex;
  int runs = 0;
  auto f = ex.schedule(100ns, [&] { return ++runs; });
  ex.now += 99;
  CHECK(ex.run_due() == 0);
  CHECK_FALSE(f.is_done());
  ex.now += 1;
  CHECK(ex.run_due() == 1);
  CHECK(f.get() == 1);
}

TEST_CASE("equal deadlines run first in, first out") {
  ManualClockExecutor ex;
  std::string order;
  for (char c : std::string("abcdef")) ex.schedule(10ns, [&order, c] { order += c; });
  ex.now += 10;
  ex.run_due();
  CHECK(order == "abcdef");
}

TEST_CASE("tasks run in deadline order whatever the order they were scheduled in") {
  ManualClockExecutor ex;
  std::string order;
  ex.schedule(30ns, [&] { order += "3"; });
  ex.schedule(10ns, [&] { order += "1"; });
  ex.schedule(20ns, [&] { order += "2"; });
  CHECK(ex.next_deadline() == ex.now + 10);
  ex.now += 100;
  ex.run_due();
  CHECK(order == "123");
}

TEST_CASE("cancel removes a task from the queue") {
  ManualClockExecutor ex;
  bool ran = false;
  auto a = ex.schedule(10ns, [&] { ran = true; });
  auto b = ex.schedule(20ns, [] {});
  CHECK(ex.scheduled_task_count() == 2);
  CHECK(a.cancel());
  CHECK(a.is_cancelled());
  CHECK(ex.scheduled_task_count() == 1);
  ex.now += 100;
  ex.run_due();
  CHECK_FALSE(ran);
  CHECK(b.is_success());
}

TEST_CASE("cancelling tasks in the middle of the heap keeps deadline order") {
  ManualClockExecutor ex;
  std::vector<ScheduledFuture<void>> futures;
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) {
    futures.push_back(ex.schedule(std::chrono::nanoseconds((i * 37) % 101),
                                  [&order, i] { order.push_back((i * 37) % 101); }));
  }
  for (int i = 0; i < 100; i += 3) futures[i].cancel();
  ex.now += 1000;
  ex.run_due();
  CHECK(order.size() == 66);
  CHECK(std::is_sorted(order.begin(), order.end()));
}

TEST_CASE("deadlines saturate instead of overflowing") {
  ManualClockExecutor ex;
  ex.now = std::numeric_limits<std::int64_t>::max() - 10;
  auto f = ex.schedule(std::chrono::hours(1'000'000), [] {});
  CHECK(f.deadline_nanos() == std::numeric_limits<std::int64_t>::max());
  CHECK(f.delay_nanos() == 10);
}

TEST_CASE("a negative delay means now") {
  ManualClockExecutor ex;
  bool ran = false;
  auto f = ex.schedule(-5s, [&] { ran = true; });
  CHECK(f.deadline_nanos() == ex.now);
  ex.run_due();
  CHECK(ran);
}

TEST_CASE("fixed-rate catches up N times when the clock jumps N periods") {
  ManualClockExecutor ex;
  int runs = 0;
  auto f = ex.schedule_at_fixed_rate(10ns, 10ns, [&] { ++runs; });
  ex.now += 50;  // deadlines +10, +20, +30, +40, +50 are all due
  ex.run_due();
  CHECK(runs == 5);
  CHECK(f.deadline_nanos() == ex.now + 10);
  CHECK_FALSE(f.is_done());
  f.cancel();
  CHECK(ex.scheduled_task_count() == 0);
}

TEST_CASE("fixed-delay fires once when the clock jumps N delays") {
  ManualClockExecutor ex;
  int runs = 0;
  auto f = ex.schedule_with_fixed_delay(10ns, 10ns, [&] { ++runs; });
  ex.now += 50;
  ex.run_due();
  CHECK(runs == 1);
  CHECK(f.deadline_nanos() == ex.now + 10);
  f.cancel();
}

TEST_CASE("a periodic task re-queues its own node without allocating") {
  ManualClockExecutor ex;
  int runs = 0;
  auto f = ex.schedule_at_fixed_rate(1ns, 1ns, [&] { ++runs; });
  ex.now += 1;
  ex.run_due();  // warm up the heap's storage
  testing::AllocationScope allocations;
  for (int i = 0; i < 100; ++i) {
    ex.now += 1;
    ex.run_due();
  }
  CHECK(runs == 101);
  CHECK(allocations.count() == 0);
  f.cancel();
}

TEST_CASE("scheduling and cancelling in steady state allocates nothing") {
  ManualClockExecutor ex;
  auto round = [&ex] {
    for (int i = 0; i < 1000; ++i) {
      auto f = ex.schedule(1s, [i] { return i; });
      f.cancel();
    }
    for (int i = 0; i < 1000; ++i) ex.schedule(0s, [] {});
    ex.run_due();
  };
  round();  // warms the node cache and the heap's storage
  testing::AllocationScope allocations;
  round();
#if TRELLIS_NODE_CACHE_ENABLED
  CHECK(allocations.count() == 0);
#endif
}

TEST_CASE("a periodic task that throws stops and fails its future") {
  ManualClockExecutor ex;
  int runs = 0;
  auto f = ex.schedule_at_fixed_rate(1ns, 1ns, [&] {
    if (++runs == 3) throw Error("third");
  });
  ex.now += 10;
  ex.run_due();
  CHECK(runs == 3);
  CHECK(f.is_done());
  CHECK_THROWS_WITH_AS(f.get(), "third", Error);
  CHECK(ex.scheduled_task_count() == 0);
}

TEST_CASE("a one-shot task's exception completes its future") {
  ManualClockExecutor ex;
  auto f = ex.schedule(0ns, []() -> int { throw Error("nope"); });
  ex.run_due();
  CHECK_THROWS_WITH_AS(f.get(), "nope", Error);
}

TEST_CASE("non-positive periods are rejected") {
  ManualClockExecutor ex;
  CHECK_THROWS_AS(ex.schedule_at_fixed_rate(1ns, 0ns, [] {}), InvalidArgumentError);
  CHECK_THROWS_AS(ex.schedule_with_fixed_delay(1ns, -1ns, [] {}), InvalidArgumentError);
}

TEST_CASE("cancel from another thread removes the task on the executor") {
  ThreadPoolExecutor pool(1);
  auto f = pool.schedule(1h, [] {});
  std::thread([&] { CHECK(f.cancel()); }).join();
  CHECK(f.is_cancelled());
  auto count = pool.submit([&pool] { return pool.scheduled_task_count(); });
  CHECK(count.get() == 0);
}
