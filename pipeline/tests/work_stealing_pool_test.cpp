#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <trellis/pipeline.hpp>
#include <trellis/pipeline/work_stealing_pool.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {
constexpr auto kWait = 10s;  // bound for waits that normally end in microseconds

template <class T>
bool ready(const std::future<T>& f) {
  return f.wait_for(kWait) == std::future_status::ready;
}
}  // namespace

TEST_CASE("execute runs callables on the pool's workers") {
  WorkStealingPool pool(2);
  CHECK(pool.worker_count() == 2);
  CHECK_FALSE(pool.in_event_loop());
  std::promise<bool> in_loop;
  pool.execute([&] { in_loop.set_value(pool.in_event_loop() && current_executor() == &pool); });
  auto f = in_loop.get_future();
  REQUIRE(ready(f));
  CHECK(f.get());
}

TEST_CASE("every callable submitted from many threads runs exactly once") {
  WorkStealingPool pool(2);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::atomic<int> ran{0};
  std::latch done(kThreads * kPerThread);
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        pool.execute([&] {
          ran.fetch_add(1, std::memory_order_relaxed);
          done.count_down();
        });
      }
    });
  }
  for (auto& p : producers) p.join();
  done.wait();
  CHECK(ran.load() == kThreads * kPerThread);
}

TEST_CASE("work a worker queues for itself is stolen by an idle worker") {
  WorkStealingPool pool(2);
  std::promise<bool> result;
  pool.execute([&] {
    // This worker stays busy until the children ran: only a thief can run them.
    std::atomic<int> children{0};
    for (int i = 0; i < 8; ++i) pool.execute([&] { children.fetch_add(1); });
    auto until = std::chrono::steady_clock::now() + kWait;
    while (children.load() < 8 && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    result.set_value(children.load() == 8);
  });
  auto f = result.get_future();
  REQUIRE(ready(f));
  CHECK(f.get());
}

TEST_CASE("spawned tasks run, await each other and return their results") {
  WorkStealingPool pool(2);
  auto f = pool.spawn([]() -> Task<int> {
    auto inner = []() -> Task<int> { co_return 20; };
    int a = co_await inner();
    int b = co_await inner();
    co_return a + b + 2;
  }());
  REQUIRE(f.wait_for(kWait));
  CHECK(f.get() == 42);
}

TEST_CASE("sleep_for resumes the task on the pool after the delay") {
  WorkStealingPool pool(2);
  auto start = std::chrono::steady_clock::now();
  auto f = pool.spawn([](WorkStealingPool& p) -> Task<bool> {
    co_await sleep_for(20ms);
    bool first = p.in_event_loop();
    co_await sleep_for(10ms);
    co_return first&& p.in_event_loop();
  }(pool));
  REQUIRE(f.wait_for(kWait));
  CHECK(f.get());
  CHECK(std::chrono::steady_clock::now() - start >= 30ms);
}

TEST_CASE("scheduled tasks run in deadline order and can be cancelled") {
  WorkStealingPool pool(2);
  std::mutex m;
  std::string order;
  auto record = [&](char c) {
    std::lock_guard lock(m);
    order += c;
  };
  auto cancelled = pool.schedule(15ms, [&] { record('x'); });
  auto b = pool.schedule(300ms, [&] { record('b'); });
  auto a = pool.schedule(5ms, [&] { record('a'); });
  CHECK(cancelled.cancel());
  REQUIRE(b.wait_for(kWait));
  REQUIRE(a.wait_for(kWait));
  std::lock_guard lock(m);
  CHECK(order == "ab");
}

TEST_CASE("a fixed-rate task repeats until cancelled") {
  WorkStealingPool pool(2);
  std::atomic<int> runs{0};
  std::promise<void> three;
  auto f = pool.schedule_at_fixed_rate(1ms, 2ms, [&] {
    if (runs.fetch_add(1) + 1 == 3) three.set_value();
  });
  auto t = three.get_future();
  REQUIRE(ready(t));
  f.cancel();
  CHECK(runs.load() >= 3);
}

TEST_CASE("co_await yield() lets the work already queued run first") {
  WorkStealingPool pool(1);
  std::string order;  // one worker: no synchronisation needed inside the pool
  auto f = pool.spawn([](WorkStealingPool& p, std::string& o) -> Task<std::string> {
    p.execute([&o] { o += "b"; });
    p.execute([&o] { o += "c"; });
    o += "a";
    co_await yield();
    o += "d";
    co_return o;
  }(pool, order));
  REQUIRE(f.wait_for(kWait));
  CHECK(f.get() == "abcd");
}

TEST_CASE("Future::get of a pool future on a worker is refused, not a deadlock") {
  WorkStealingPool pool(1);
  auto f = pool.submit([&] {
    Promise<int> p(&pool);
    try {
      p.future().get();
    } catch (const BlockingOperationError&) {
      return true;
    }
    return false;
  });
  REQUIRE(f.wait_for(kWait));
  CHECK(f.get());
}

TEST_CASE("shutdown_gracefully runs queued work, then terminates and rejects new work") {
  WorkStealingPool pool(2);
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) pool.execute([&] { ran.fetch_add(1); });
  auto late = pool.schedule(1h, [] {});
  auto term = pool.shutdown_gracefully(0ms, 5s);
  CHECK(pool.is_shutting_down());
  REQUIRE(term.wait_for(kWait));
  CHECK(pool.is_terminated());
  CHECK(ran.load() == 100);
  CHECK(late.is_cancelled());
  CHECK_THROWS_AS(pool.execute([] {}), RejectedExecutionError);
  CHECK(pool.live_blocker_threads() == 0);
}

TEST_CASE("the quiet period keeps the pool running while work arrives") {
  WorkStealingPool pool(2);
  auto term = pool.shutdown_gracefully(50ms, 5s);
  // Still accepted during the quiet period.
  auto f = pool.submit([] { return 7; });
  REQUIRE(f.wait_for(kWait));
  CHECK(f.get() == 7);
  REQUIRE(term.wait_for(kWait));
}

TEST_CASE("a busy pool parks idle workers and wakes them for new work") {
  WorkStealingPool pool(4);
  for (int round = 0; round < 50; ++round) {
    std::latch done(8);
    for (int i = 0; i < 8; ++i) pool.execute([&] { done.count_down(); });
    done.wait();
  }
  CHECK(pool.blocker_threads_created() == 0);
  CHECK(pool.hand_offs() == 0);
}
