// Tasks asleep when their executor stops, and cancellation racing the timer on a pool.
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <trellis/pipeline.hpp>
#include <trellis/testing.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {
// Sleeps for d; records how the sleep ended.
Task<void> sleeper(std::chrono::nanoseconds d, std::atomic<int>& woke,
                   std::atomic<int>& cancelled) {
  try {
    co_await sleep_for(d);
    woke.fetch_add(1);
  } catch (const CancelledError&) {
    cancelled.fetch_add(1);
    throw;
  }
}

bool failed_with_cancelled(const Future<void>& f) {
  if (!f.is_done() || f.is_success()) return false;
  try {
    std::rethrow_exception(f.cause());
  } catch (const CancelledError&) {
    return true;
  } catch (...) {
    return false;
  }
}
}  // namespace

TEST_CASE("a task asleep when its embedded channel closes completes with CancelledError") {
  EmbeddedChannel ch;
  ch.event_loop().freeze_time();
  std::atomic<int> woke{0}, cancelled{0};
  auto f = ch.event_loop().spawn(sleeper(1h, woke, cancelled));
  ch.run_pending_tasks();
  REQUIRE_FALSE(f.is_done());
  ch.close();
  CHECK(failed_with_cancelled(f));
  CHECK(cancelled.load() == 1);
  CHECK(woke.load() == 0);
}

TEST_CASE("tasks asleep on a pool that shuts down complete with CancelledError") {
  std::atomic<int> woke{0}, cancelled{0};
  std::vector<Future<void>> futures;
  {
    ThreadPoolExecutor pool(1, "sleepers");  // one thread: its queue runs in order
    for (int i = 0; i < 100; ++i) futures.push_back(pool.spawn(sleeper(1h, woke, cancelled)));
    pool.submit([] {}).get();  // after every task has started, so reached its sleep
    for (auto& f : futures) REQUIRE_FALSE(f.is_done());
    pool.shutdown_gracefully(0ns, 0ns);
    pool.termination_future().get();
  }
  for (auto& f : futures) CHECK(failed_with_cancelled(f));
  CHECK(cancelled.load() == 100);
  CHECK(woke.load() == 0);
}

TEST_CASE("cancelling 10,000 sleeping tasks on a pool races their timers safely") {
  // Short sleeps, so that for many tasks the cancellation and the timer complete at the same
  // time on different threads: each task ends exactly once, woken or cancelled.
  ThreadPoolExecutor pool(4, "cancel-race");
  std::atomic<int> woke{0}, cancelled{0};
  std::vector<Future<void>> futures;
  futures.reserve(10'000);
  for (int i = 0; i < 10'000; ++i) {
    futures.push_back(pool.spawn(sleeper(std::chrono::microseconds(i % 200), woke, cancelled)));
  }
  for (auto& f : futures) f.cancel();
  int done = 0;
  for (auto& f : futures) {
    f.wait();
    ++done;
  }
  CHECK(done == 10'000);
  // A cancel that came before the task started means the task never ran (neither count).
  CHECK(woke.load() + cancelled.load() <= 10'000);
  // Every started task ended once: the counts settle and nothing resumes twice.
  pool.shutdown_gracefully(0ns, 1s);
  pool.termination_future().get();
  CHECK(woke.load() + cancelled.load() <= 10'000);
}

namespace {
// Awaits f; records whether the code after the await ran.
Task<int> awaiter_of(Future<int> f, std::atomic<bool>& after) {
  int v = co_await f;
  after = true;
  co_return v;
}

bool failed_with_rejected(const Future<int>& f) {
  if (!f.is_done() || f.is_success()) return false;
  try {
    std::rethrow_exception(f.cause());
  } catch (const RejectedExecutionError&) {
    return true;
  } catch (...) {
    return false;
  }
}
}  // namespace

TEST_CASE("a resumption refused by a terminated executor fails the task's future") {
  Promise<int> p;
  std::atomic<bool> after{false};
  ThreadPoolExecutor pool(1, "refuser");  // terminated below, destroyed at the end
  Future<int> f = pool.spawn(awaiter_of(p.future(), after));
  pool.submit([] {}).get();  // the task reached its await
  pool.shutdown_gracefully(0ns, 0ns);
  pool.termination_future().get();
  REQUIRE_FALSE(f.is_done());
  p.set_value(7);  // completes on this thread: the pool cannot take the resumption
  CHECK(failed_with_rejected(f));
  CHECK_FALSE(after.load());
}

TEST_CASE("a resumption refused by a shutting-down loop fails the task's future") {
  // A completion on another thread after the loop stopped must not run the task there.
  Promise<int> p;
  std::atomic<bool> after{false};
  AsyncTestingEventLoop loop;
  auto f = loop.spawn(awaiter_of(p.future(), after));
  loop.submit([] {}).get();  // the task reached its await
  REQUIRE_FALSE(f.is_done());
  loop.shutdown_gracefully(0s, 0s).get();
  std::thread([&] { p.set_value(7); }).join();
  CHECK(failed_with_rejected(f));
  CHECK_FALSE(after.load());
}
