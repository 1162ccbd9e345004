#include <doctest/doctest.h>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <trellis/pipeline.hpp>
#include <trellis/pipeline/blocking.hpp>
#include <trellis/pipeline/work_stealing_pool.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {
constexpr auto kWait = 10s;  // bound for waits that normally end in microseconds

// Polls cond (a counter reaching a value) for at most kWait.
template <class F>
bool eventually(F cond) {
  auto until = std::chrono::steady_clock::now() + kWait;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

std::string os_thread_name() {
  char buf[32] = {};
  pthread_getname_np(pthread_self(), buf, sizeof buf);
  return buf;
}

WorkStealingPool::Options options(std::size_t threads, bool in_place = true) {
  WorkStealingPool::Options o;
  o.threads = threads;
  o.in_place_blocking = in_place;
  return o;
}

Task<int> block_on(std::shared_future<void> gate) {
  auto wait = [gate] {
    gate.wait();
    return 1;
  };
  co_return co_await blocking(wait);
}
}  // namespace

TEST_CASE("co_await blocking returns fn's result, in place on a pool worker") {
  WorkStealingPool pool(2);
  auto f = pool.spawn([](WorkStealingPool& p) -> Task<bool> {
    auto id = std::this_thread::get_id();
    int v = co_await blocking([] { return 42; });
    // fn ran on this very thread, which handed its worker role off and is now a blocker.
    bool same = std::this_thread::get_id() == id && !p.in_event_loop();
    co_await yield();  // suspends: the task continues on a worker
    co_return v == 42 && same&& p.in_event_loop();
  }(pool));
  REQUIRE(f.wait_for(kWait));
  CHECK(f.get());
  CHECK(pool.hand_offs() == 1);
}

TEST_CASE("a task blocking 100 ms on a 2-worker pool does not delay other tasks of that pool") {
  // Both workers block (in blocking sections) until the test releases them; the other tasks
  // must all complete meanwhile, which is only possible if the worker roles were handed off.
  WorkStealingPool pool(2);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  auto b1 = pool.spawn(block_on(gate));
  auto b2 = pool.spawn(block_on(gate));
  REQUIRE(eventually([&] { return pool.hand_offs() == 2; }));
  std::vector<Future<int>> others;
  for (int i = 0; i < 20; ++i) {
    others.push_back(pool.spawn([](int x) -> Task<int> {
      co_await yield();
      co_return x;
    }(i)));
  }
  for (int i = 0; i < 20; ++i) {
    REQUIRE(others[i].wait_for(kWait));
    CHECK(others[i].get() == i);
  }
  CHECK_FALSE(b1.is_done());
  CHECK_FALSE(b2.is_done());
  release.set_value();
  REQUIRE(b1.wait_for(kWait));
  REQUIRE(b2.wait_for(kWait));
  CHECK(b1.get() + b2.get() == 2);
  CHECK(pool.blocker_threads_created() == 2);
}

TEST_CASE("10,000 sequential short blocking sections create at most a handful of threads") {
  for (bool in_place : {true, false}) {
    CAPTURE(in_place);
    WorkStealingPool pool(options(2, in_place));
    auto f = pool.spawn([]() -> Task<int> {
      int sum = 0;
      for (int i = 0; i < 10000; ++i) {
        sum += co_await blocking([] { return 1; });
        if (i % 2 == 0) co_await yield();  // leave the blocker thread half of the time
      }
      co_return sum;
    }());
    REQUIRE(f.wait_for(30s));
    CHECK(f.get() == 10000);
    MESSAGE("threads created: ", pool.blocker_threads_created());
    // One replacement for the first hand-off, at most one more while a hand-off races the
    // take-back of a short section: a blocker is idle in the cache before it re-queues its task.
    CHECK(pool.blocker_threads_created() <= 2);
    // In place, sections started on a worker hand its role off. How many of them start on a
    // worker depends on which thread wins the yielded task (about 5,000 on an idle machine,
    // 2,501 seen under heavy load): that is a figure for bench_blocking, not an invariant.
    MESSAGE("hand-offs: ", pool.hand_offs());
    if (in_place) CHECK(pool.hand_offs() > 0);
    if (!in_place) CHECK(pool.hand_offs() == 0);
  }
}

TEST_CASE("a task that blocks many times without suspending hands off once") {
  WorkStealingPool pool(2);
  auto f = pool.spawn([]() -> Task<int> {
    int sum = 0;
    for (int i = 0; i < 1000; ++i) sum += co_await blocking([] { return 1; });
    co_return sum;
  }());
  REQUIRE(f.wait_for(kWait));
  CHECK(f.get() == 1000);
  CHECK(pool.hand_offs() == 1);
}

TEST_CASE("nested blocking sections run in place without another hand-off") {
  WorkStealingPool pool(2);
  auto f = pool.spawn([]() -> Task<int> {
    auto outer = [] {
      int n = 0;
      for (int i = 0; i < 100; ++i) {
        n += blocking_section([] { return blocking_section([] { return 1; }); });
      }
      return n;
    };
    co_return co_await blocking(outer);
  }());
  REQUIRE(f.wait_for(kWait));
  CHECK(f.get() == 100);
  CHECK(pool.hand_offs() == 1);
}

TEST_CASE("blocking_section on a worker hands the worker role off and allows Future::get") {
  WorkStealingPool pool(2);
  auto f = pool.submit([&pool] {
    bool before = pool.in_event_loop();
    // Waiting for the pool's own work is fine here: another thread holds the worker role.
    int v = blocking_section([&pool] { return pool.submit([] { return 5; }).get(); });
    return before && !pool.in_event_loop() && v == 5;
  });
  REQUIRE(f.wait_for(kWait));
  CHECK(f.get());
  CHECK(pool.hand_offs() == 1);
}

TEST_CASE("exceptions from fn reach the awaiting task") {
  for (bool in_place : {true, false}) {
    CAPTURE(in_place);
    WorkStealingPool pool(options(2, in_place));
    auto f = pool.spawn([]() -> Task<std::string> {
      try {
        co_await blocking([]() -> int { throw IllegalStateError("from fn"); });
      } catch (const IllegalStateError& e) {
        co_return e.what();
      }
      co_return "none";
    }());
    REQUIRE(f.wait_for(kWait));
    CHECK(f.get() == "from fn");
  }
  CHECK_THROWS_AS(blocking_section([] { throw InvalidArgumentError("sync"); }),
                  InvalidArgumentError);
}

TEST_CASE("shifted blocking runs on a trellis-blocker thread and resumes on the pool") {
  WorkStealingPool pool(options(2, /*in_place=*/false));
  auto f = pool.spawn([](WorkStealingPool& p) -> Task<bool> {
    auto names = [] {
      return detail::BlockerCache::current_thread_name() + "|" + os_thread_name();
    };
    auto seen = co_await blocking(names);
    auto sep = seen.find('|');
    auto full = seen.substr(0, sep);
    auto os = seen.substr(sep + 1);
    co_return full.rfind("trellis-blocker-", 0) == 0 &&
        full.substr(0, 15) == os&& p.in_event_loop();
  }(pool));
  REQUIRE(f.wait_for(kWait));
  CHECK(f.get());
  CHECK(pool.hand_offs() == 0);
}

TEST_CASE("blocking_section off the pool just calls fn") {
  CHECK(blocking_section([] { return 3; }) == 3);
  CHECK(detail::t_thread_role.role == detail::ThreadRole::kOther);
}

TEST_CASE("idle blocker threads expire after the keep-alive and the cache shrinks to zero") {
  auto o = options(2);
  o.blocker_keep_alive = 20ms;
  WorkStealingPool pool(o);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::vector<Future<int>> blocked;
  for (int i = 0; i < 4; ++i) blocked.push_back(pool.spawn(block_on(gate)));
  REQUIRE(eventually([&] { return pool.hand_offs() == 4; }));
  CHECK(pool.blocker_threads_created() == 4);
  CHECK(pool.live_blocker_threads() == 4);
  release.set_value();
  for (auto& b : blocked) REQUIRE(b.wait_for(kWait));
  // The four surplus threads idle out.
  CHECK(eventually([&] { return pool.live_blocker_threads() == 0; }));
  CHECK(pool.cached_blocker_threads() == 0);
  // And the pool still works, creating a thread again on demand.
  auto again = pool.spawn(block_on(gate));
  REQUIRE(again.wait_for(kWait));
  CHECK(pool.blocker_threads_created() == 5);
}

TEST_CASE("the most recently idled blocker thread is reused first") {
  detail::BlockerCache cache({60s, 16, "trellis-blocker"});
  std::promise<std::thread::id> a_id, b_id;
  std::promise<void> a_go, b_go;
  UniqueFunction<void()> a([&] {
    a_id.set_value(std::this_thread::get_id());
    a_go.get_future().wait();
  });
  UniqueFunction<void()> b([&] {
    b_id.set_value(std::this_thread::get_id());
    b_go.get_future().wait();
  });
  REQUIRE(cache.try_run(a));
  REQUIRE(cache.try_run(b));
  auto ta = a_id.get_future().get();
  auto tb = b_id.get_future().get();
  CHECK(ta != tb);
  a_go.set_value();
  REQUIRE(eventually([&] { return cache.idle_threads() == 1; }));
  b_go.set_value();
  REQUIRE(eventually([&] { return cache.idle_threads() == 2; }));
  std::promise<std::thread::id> c_id;
  UniqueFunction<void()> c([&] { c_id.set_value(std::this_thread::get_id()); });
  REQUIRE(cache.try_run(c));
  CHECK(c_id.get_future().get() == tb);
  CHECK(cache.threads_created() == 2);
}

TEST_CASE("keep-alive expiry racing with takers loses no job and runs none twice") {
  detail::BlockerCache cache({std::chrono::microseconds(200), 64, "trellis-blocker"});
  constexpr int kJobs = 3000;
  std::atomic<int> ran{0};
  std::latch done(kJobs);
  for (int i = 0; i < kJobs; ++i) {
    UniqueFunction<void()> job([&] {
      ran.fetch_add(1);
      done.count_down();
    });
    REQUIRE(cache.run(job));
    if (i % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(150 + i % 100));
  }
  done.wait();
  CHECK(ran.load() == kJobs);
  CHECK(eventually([&] { return cache.live_threads() == 0; }));
}

TEST_CASE("at the thread cap shifted jobs wait for a free thread") {
  detail::BlockerCache cache({60s, 1, "trellis-blocker"});
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::atomic<int> ran{0};
  std::latch done(3);
  for (int i = 0; i < 3; ++i) {
    UniqueFunction<void()> job([&, gate] {
      gate.wait();
      ran.fetch_add(1);
      done.count_down();
    });
    REQUIRE(cache.run(job));
  }
  CHECK(cache.live_threads() == 1);
  go.set_value();
  done.wait();
  CHECK(ran.load() == 3);
  CHECK(cache.threads_created() == 1);
}

TEST_CASE("shutdown wakes and joins idle blocker threads") {
  auto start = std::chrono::steady_clock::now();
  {
    detail::BlockerCache cache({1h, 16, "trellis-blocker"});
    std::latch started(3);
    std::promise<void> go;
    std::shared_future<void> gate = go.get_future().share();
    for (int i = 0; i < 3; ++i) {
      UniqueFunction<void()> job([&, gate] {
        started.count_down();
        gate.wait();
      });
      REQUIRE(cache.try_run(job));
    }
    started.wait();
    go.set_value();
    REQUIRE(eventually([&] { return cache.idle_threads() == 3; }));
  }  // the destructor must not wait for the one-hour keep-alive
  CHECK(std::chrono::steady_clock::now() - start < 1min);
}

TEST_CASE("shutdown with threads blocked waits for them, then joins every thread") {
  WorkStealingPool pool(2);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  auto blocked = pool.spawn(block_on(gate));
  REQUIRE(eventually([&] { return pool.hand_offs() == 1; }));
  auto term = pool.shutdown_gracefully(0ms, 1h);
  CHECK(pool.is_shutting_down());
  CHECK_FALSE(term.is_done());  // a thread is still in fn: nothing may stop under it
  release.set_value();
  REQUIRE(term.wait_for(kWait));
  REQUIRE(blocked.is_done());
  CHECK(blocked.get() == 1);
  CHECK(pool.is_terminated());
  CHECK(pool.live_blocker_threads() == 0);
  CHECK(pool.blocker_cache().live_threads() == 0);
}
