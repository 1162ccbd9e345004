#include <doctest/doctest.h>

#include <pthread.h>

#include <atomic>
#include <future>
#include <latch>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <trellis/transport.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {
std::string thread_name() {
  char buf[32] = {};
  pthread_getname_np(pthread_self(), buf, sizeof buf);
  return buf;
}
}  // namespace

TEST_CASE("execute runs tasks on the loop thread in submission order") {
  EventLoop loop;
  std::string order;
  for (char c : std::string("abcde")) {
    loop.execute([&order, c] { order += c; });
  }
  auto in_loop = loop.submit([&loop] { return loop.in_event_loop(); });
  CHECK(in_loop.get());
  CHECK(order == "abcde");
  CHECK_FALSE(loop.in_event_loop());
}

TEST_CASE("loop threads are named trellis-el-N") {
  EventLoopGroup group(2);
  auto a = group.next().submit(thread_name).get();
  auto b = group.next().submit(thread_name).get();
  CHECK(a.rfind("trellis-el-", 0) == 0);
  CHECK(b.rfind("trellis-el-", 0) == 0);
  CHECK(a != b);
}

TEST_CASE("next hands out loops round robin") {
  EventLoopGroup group(3);
  std::set<EventLoop*> seen;
  for (int i = 0; i < 3; ++i) seen.insert(&group.next());
  CHECK(seen.size() == 3);
  CHECK(&group.next() == &group[0]);
  int n = 0;
  for (auto& loop : group) {
    (void)loop;
    ++n;
  }
  CHECK(n == 3);
}

TEST_CASE("scheduled tasks run after their delay in deadline order") {
  EventLoop loop;
  std::string order;
  std::latch done(1);
  auto start = std::chrono::steady_clock::now();
  loop.schedule(30ms, [&] {
    order += "b";
    done.count_down();
  });
  loop.schedule(10ms, [&] { order += "a"; });
  done.wait();
  CHECK(order == "ab");
  CHECK(std::chrono::steady_clock::now() - start >= 30ms);
}

TEST_CASE("a task scheduled from outside with an earlier deadline wakes the loop") {
  EventLoop loop;
  auto late = loop.schedule(1h, [] {});
  auto start = std::chrono::steady_clock::now();
  auto early = loop.schedule(5ms, [] { return 1; });
  CHECK(early.get() == 1);
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  late.cancel();
}

TEST_CASE("a task scheduled from outside with a later deadline still runs on time") {
  EventLoop loop;
  std::atomic<int> ran{0};
  auto first = loop.schedule(20ms, [&] { ++ran; });
  // Not earlier than the armed deadline: queued lazily, picked up when the timer fires.
  auto second = loop.schedule(25ms, [&] { ++ran; });
  second.get();
  CHECK(first.is_done());
  CHECK(ran == 2);
}

TEST_CASE("scheduling from outside no earlier than the armed deadline does not wake the loop") {
  EventLoop loop;
  auto first = loop.schedule(1h, [] {});
  loop.submit([] {}).get();  // the 1 h timer is armed now
  auto before = loop.wakeups();
  std::vector<ScheduledFuture<void>> later;
  for (int i = 0; i < 100; ++i) later.push_back(loop.schedule(2h, [] {}));
  CHECK(loop.wakeups() == before);
  auto earlier = loop.schedule(1ms, [] {});
  CHECK(loop.wakeups() == before + 1);
  earlier.get();
  // The lazily queued tasks were picked up on the way.
  CHECK(loop.submit([&] { return loop.scheduled_task_count(); }).get() == 101);
  for (auto& f : later) f.cancel();
  first.cancel();
}

TEST_CASE("listeners of a loop's promise run on the loop thread") {
  EventLoop loop;
  Promise<int> p(&loop);
  std::promise<bool> on_loop;
  p.future().add_listener([&](const Future<int>&) { on_loop.set_value(loop.in_event_loop()); });
  p.set_value(1);  // completed from this (foreign) thread: the listener is posted
  CHECK(on_loop.get_future().get());
}

TEST_CASE("cancel from another thread removes a scheduled task") {
  EventLoop loop;
  auto f = loop.schedule(1h, [] {});
  CHECK(loop.submit([&] { return loop.scheduled_task_count(); }).get() == 1);
  CHECK(f.cancel());
  CHECK(loop.submit([&] { return loop.scheduled_task_count(); }).get() == 0);
}

TEST_CASE("fixed-rate tasks repeat until cancelled") {
  EventLoop loop;
  std::atomic<int> runs{0};
  std::latch three(3);
  auto f = loop.schedule_at_fixed_rate(1ms, 1ms, [&] {
    if (runs.fetch_add(1) < 3) three.count_down();
  });
  three.wait();
  CHECK(f.cancel());
  CHECK(f.is_cancelled());
}

TEST_CASE("a task that throws is logged and the loop keeps running") {
  EventLoop loop;
  loop.execute([] { throw Error("task failure"); });
  CHECK(loop.submit([] { return 7; }).get() == 7);
}

TEST_CASE("get on a pending future from its own loop throws instead of deadlocking") {
  EventLoop loop;
  Promise<int> p(&loop);
  auto outcome = loop.submit([f = p.future()] {
    try {
      f.get();
      return std::string("returned");
    } catch (const BlockingOperationError&) {
      return std::string("refused");
    }
  });
  CHECK(outcome.get() == "refused");
}

TEST_CASE("a spawned task resumes on its loop after awaiting another loop") {
  EventLoopGroup group(2);
  auto& a = group[0];
  auto& b = group[1];
  auto f = a.spawn([](EventLoop& self, EventLoop& other) -> Task<int> {
    int n = 0;
    for (int i = 0; i < 100; ++i) {
      n += co_await other.submit([] { return 1; });
      if (!self.in_event_loop()) co_return -1;
    }
    co_await sleep_for(1ms);
    if (!self.in_event_loop()) co_return -2;
    co_return n;
  }(a, b));
  CHECK(f.get() == 100);
}

TEST_CASE("asio co_spawn and timers run on the loop's asio executor") {
  EventLoop loop;
  std::promise<bool> on_loop;
  asio::co_spawn(
      loop.asio_executor(),
      [&]() -> asio::awaitable<void> {
        asio::steady_timer t(co_await asio::this_coro::executor, 1ms);
        co_await t.async_wait(asio::use_awaitable);
        on_loop.set_value(loop.in_event_loop());
      },
      asio::detached);
  CHECK(on_loop.get_future().get());
}

TEST_CASE("graceful shutdown runs queued tasks, cancels scheduled ones and then rejects") {
  auto loop = std::make_unique<EventLoop>();
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) loop->execute([&] { ++ran; });
  auto pending = loop->schedule(1h, [] {});
  auto terminated = loop->shutdown_gracefully(10ms, 1s);
  CHECK(loop->is_shutting_down());
  terminated.get();
  CHECK(loop->is_terminated());
  CHECK(ran == 100);
  CHECK(pending.is_cancelled());
  CHECK_THROWS_AS(loop->execute([] {}), RejectedExecutionError);
  CHECK_THROWS_AS(loop->schedule(1ms, [] {}), RejectedExecutionError);
  CHECK_THROWS_AS(loop->submit([] {}), RejectedExecutionError);
}

TEST_CASE("tasks submitted during the quiet period run and extend it") {
  EventLoop loop;
  auto terminated = loop.shutdown_gracefully(50ms, 5s);
  std::atomic<int> ran{0};
  for (int i = 0; i < 5; ++i) {
    loop.execute([&] { ++ran; });
    std::this_thread::sleep_for(5ms);
  }
  terminated.get();
  CHECK(ran == 5);
}

TEST_CASE("shutdown timeout ends the quiet period even under constant work") {
  EventLoop loop;
  std::atomic<bool> stop{false};
  std::thread feeder([&] {
    while (!stop) {
      try {
        loop.execute([] {});
      } catch (const RejectedExecutionError&) {
        break;
      }
      std::this_thread::sleep_for(1ms);
    }
  });
  auto start = std::chrono::steady_clock::now();
  loop.shutdown_gracefully(1s, 100ms).get();
  CHECK(std::chrono::steady_clock::now() - start < 900ms);
  stop = true;
  feeder.join();
}

TEST_CASE("group shutdown terminates every loop") {
  EventLoopGroup group(3);
  group.shutdown_gracefully(0ms, 1s).get();
  group.join();
  for (auto& loop : group) CHECK(loop.is_terminated());
}

TEST_CASE("destroying a group from one of its own threads is reported, not a crash") {
  auto* group = new EventLoopGroup(2);
  std::promise<void> done;
  (*group)[0].execute([group, &done] {
    delete group;  // logged; the loops end on their own
    done.set_value();
  });
  done.get_future().get();
}

TEST_CASE("the loop's coarse clock is its monotonic clock at the kernel's tick") {
  EventLoop loop;
  for (int i = 0; i < 100; ++i) {
    const std::int64_t before = loop.current_time_nanos();
    const std::int64_t coarse = loop.coarse_time_nanos();
    const std::int64_t after = loop.current_time_nanos();
    // Never ahead of the precise clock, and on its timeline: behind by at most a tick (a tick
    // is 1-10 ms; one second of slack allows for the thread being descheduled between reads).
    CHECK(coarse <= after);
    CHECK(coarse > before - 1'000'000'000);
  }
}

TEST_CASE("a task accepted while the loop shuts down runs; one that is not is refused") {
  // Submitters race the last look at the queue. Every execute() that returned (did not throw
  // RejectedExecutionError) must have run by termination.
  for (int round = 0; round < 50; ++round) {
    auto loop = std::make_unique<EventLoop>();
    std::atomic<int> accepted{0};
    std::atomic<int> ran{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> submitters;
    for (int t = 0; t < 2; ++t) {
      submitters.emplace_back([&] {
        while (!go.load()) std::this_thread::yield();
        for (;;) {
          try {
            loop->execute([&ran] { ran.fetch_add(1); });
            accepted.fetch_add(1);
          } catch (const RejectedExecutionError&) {
            return;
          }
        }
      });
    }
    go.store(true);
    std::this_thread::sleep_for(std::chrono::microseconds(200 * (round % 5)));
    loop->shutdown_gracefully(0ns, 0ns);
    loop->termination_future().get();
    for (auto& t : submitters) t.join();
    REQUIRE(ran.load() == accepted.load());
  }
}

TEST_CASE("a task asleep when its loop shuts down completes with CancelledError") {
  EventLoop loop;
  std::atomic<bool> cancelled{false};
  auto f = loop.spawn([](std::atomic<bool>& c) -> Task<void> {
    try {
      co_await sleep_for(1h);
    } catch (const CancelledError&) {
      c.store(true);
      throw;
    }
  }(cancelled));
  loop.submit([] {}).get();  // the task has started and is asleep
  REQUIRE_FALSE(f.is_done());
  loop.shutdown_gracefully(0ns, 0ns);
  loop.termination_future().get();
  REQUIRE(f.is_done());
  CHECK(cancelled.load());
  CHECK_THROWS_AS(f.get(), CancelledError);
}
