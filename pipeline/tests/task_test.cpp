#include <doctest/doctest.h>

#include <string>
#include <thread>

#include <trellis/pipeline.hpp>
#include <trellis/testing.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {
Task<int> answer() { co_return 42; }
Task<int> add(int a, int b) { co_return a + b; }
Task<int> nested() {
  int x = co_await answer();
  int y = co_await add(x, 1);
  co_return y;
}
Task<void> thrower() {
  throw Error("inside");
  co_return;
}
}  // namespace

TEST_CASE("a spawned task runs when the embedded loop runs its tasks") {
  EmbeddedEventLoop loop;
  auto f = loop.spawn(nested());
  CHECK_FALSE(f.is_done());
  loop.run_pending_tasks();
  REQUIRE(f.is_done());
  CHECK(f.get() == 43);
}

TEST_CASE("an exception in a task fails its future") {
  EmbeddedEventLoop loop;
  auto f = loop.spawn(thrower());
  loop.run_pending_tasks();
  CHECK_THROWS_WITH_AS(f.get(), "inside", Error);
}

TEST_CASE("an exception of an awaited task propagates to the awaiting task") {
  EmbeddedEventLoop loop;
  auto f = loop.spawn([]() -> Task<std::string> {
    try {
      co_await thrower();
    } catch (const Error& e) {
      co_return std::string("caught ") + e.what();
    }
    co_return "none";
  }());
  loop.run_pending_tasks();
  CHECK(f.get() == "caught inside");
}

TEST_CASE("sleep_for resumes on advance_by of the embedded loop") {
  EmbeddedEventLoop loop;
  loop.freeze_time();
  int stage = 0;
  auto f = loop.spawn([](int& s) -> Task<void> {
    s = 1;
    co_await sleep_for(1s);
    s = 2;
  }(stage));
  loop.run_pending_tasks();
  CHECK(stage == 1);
  loop.advance_by(999ms);
  CHECK(stage == 1);
  loop.advance_by(1ms);
  CHECK(stage == 2);
  CHECK(f.is_success());
}

TEST_CASE("awaiting a future completed on the same executor resumes inline") {
  EmbeddedEventLoop loop;
  Promise<int> p(&loop);
  std::string trace;
  auto f = loop.spawn([](Future<int> fut, std::string& t) -> Task<int> {
    t += "a";
    int v = co_await fut;
    t += "c";
    co_return v;
  }(p.future(), trace));
  loop.run_pending_tasks();
  CHECK(trace == "a");
  p.set_value(5);  // we are "on" the embedded loop: the task resumes right here
  CHECK(trace == "ac");
  CHECK(loop.pending_task_count() == 0);
  CHECK(f.get() == 5);
}

TEST_CASE("awaiting ready futures allocates nothing") {
  EmbeddedEventLoop loop;
  std::vector<Future<int>> ready;
  for (int i = 0; i < 100; ++i) ready.push_back(make_ready_future<int>(i));
  std::uint64_t allocations = 0;
  auto f = loop.spawn([](std::vector<Future<int>>& fs, std::uint64_t& a) -> Task<int> {
    int sum = 0;
    testing::AllocationScope scope;
    for (auto& fut : fs) sum += co_await fut;
    a = scope.count();
    co_return sum;
  }(ready, allocations));
  loop.run_pending_tasks();
  CHECK(f.get() == 4950);
  CHECK(allocations == 0);
}

TEST_CASE("a future completed on another thread resumes the task on its executor") {
  ThreadPoolExecutor pool(1);
  Promise<int> p;
  auto f = pool.spawn([](Future<int> fut, ThreadPoolExecutor& ex) -> Task<bool> {
    co_await fut;
    co_return ex.in_event_loop();
  }(p.future(), pool));
  std::this_thread::sleep_for(5ms);
  std::thread([p]() mutable { p.set_value(1); }).join();
  CHECK(f.get());
}

TEST_CASE("co_await executor.submit runs the function there and resumes here") {
  ThreadPoolExecutor other(1);
  EmbeddedEventLoop loop;
  auto f = loop.spawn([](ThreadPoolExecutor& o) -> Task<bool> {
    bool there = co_await o.submit([&o] { return o.in_event_loop(); });
    co_return there;
  }(other));
  loop.run_pending_tasks();
  // The continuation was posted back to the embedded loop.
  for (int i = 0; i < 1000 && !f.is_done(); ++i) {
    loop.run_pending_tasks();
    std::this_thread::sleep_for(1ms);
  }
  REQUIRE(f.is_done());
  CHECK(f.get());
}

TEST_CASE("resume_on moves a task to another executor for good") {
  ThreadPoolExecutor pool(1);
  EmbeddedEventLoop loop;
  auto f = loop.spawn([](ThreadPoolExecutor& p) -> Task<int> {
    co_await resume_on(p);
    int on_pool = p.in_event_loop() ? 1 : 0;
    co_await yield();
    on_pool += p.in_event_loop() ? 1 : 0;
    co_return on_pool;
  }(pool));
  loop.run_pending_tasks();
  // The future belongs to the embedded loop, whose thread is this one: wait by polling.
  for (int i = 0; i < 5000 && !f.is_done(); ++i) std::this_thread::sleep_for(1ms);
  REQUIRE(f.is_done());
  CHECK(f.get() == 2);
}

TEST_CASE("yield lets queued work run first") {
  EmbeddedEventLoop loop;
  std::string trace;
  auto f = loop.spawn([](EmbeddedEventLoop& l, std::string& t) -> Task<void> {
    l.execute([&t] { t += "other "; });
    co_await yield();
    t += "task";
  }(loop, trace));
  loop.run_pending_tasks();
  CHECK(trace == "other task");
  CHECK(f.is_success());
}

TEST_CASE("cancelling a sleeping task wakes it with CancelledError") {
  EmbeddedEventLoop loop;
  loop.freeze_time();
  std::string trace;
  auto f = loop.spawn([](std::string& t) -> Task<void> {
    try {
      co_await sleep_for(1h);
      t += "woke";
    } catch (const CancelledError&) {
      t += "cancelled";
    }
  }(trace));
  loop.run_pending_tasks();
  CHECK(loop.next_scheduled_task_nanos() > 0);
  CHECK(f.cancel());
  CHECK(trace == "cancelled");
  CHECK(f.is_cancelled());
  CHECK(loop.next_scheduled_task_nanos() == -1);
}

TEST_CASE("a task cancelled before it starts never runs") {
  EmbeddedEventLoop loop;
  bool ran = false;
  auto f = loop.spawn([](bool& r) -> Task<void> {
    r = true;
    co_return;
  }(ran));
  f.cancel();
  loop.run_pending_tasks();
  CHECK_FALSE(ran);
  CHECK(f.is_cancelled());
}

TEST_CASE("a cancelled task fails its next sleep at once") {
  EmbeddedEventLoop loop;
  loop.freeze_time();
  Promise<void> gate(&loop);
  int sleeps_failed = 0;
  auto f = loop.spawn([](Future<void> g, int& n) -> Task<void> {
    co_await g;
    try {
      co_await sleep_for(1s);
    } catch (const CancelledError&) {
      ++n;
    }
  }(gate.future(), sleeps_failed));
  loop.run_pending_tasks();
  f.cancel();
  loop.run_pending_tasks();
  gate.set_value();
  loop.run_pending_tasks();
  CHECK(sleeps_failed == 1);
}

TEST_CASE("tasks on the default executor run on its threads") {
  auto f = default_executor().spawn([]() -> Task<bool> {
    co_await sleep_for(1ms);
    co_return default_executor().in_event_loop();
  }());
  CHECK(f.get());
}
