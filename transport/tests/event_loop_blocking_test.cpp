#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include <trellis/pipeline/blocking.hpp>
#include <trellis/transport.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {
constexpr auto kWait = 10s;  // bound for waits that normally end in microseconds
}

TEST_CASE("blocking from an EventLoop never runs fn on the loop thread") {
  EventLoop loop;
  auto loop_thread = loop.submit([] { return std::this_thread::get_id(); }).get();
  auto f = loop.spawn([](EventLoop& l, std::thread::id loop_id) -> Task<bool> {
    bool all_off_loop = true;
    for (int i = 0; i < 100; ++i) {
      auto where = [] { return std::this_thread::get_id(); };
      auto ran_on = co_await blocking(where);
      // fn ran elsewhere; the task is back on its loop after every section.
      all_off_loop = all_off_loop && ran_on != loop_id && l.in_event_loop();
    }
    co_return all_off_loop;
  }(loop, loop_thread));
  REQUIRE(f.wait_for(kWait));
  CHECK(f.get());
}

TEST_CASE("the loop keeps running its other work while a task blocks") {
  EventLoop loop;
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  auto blocked = loop.spawn([](std::shared_future<void> g) -> Task<int> {
    auto wait = [g] {
      g.wait();
      return 7;
    };
    co_return co_await blocking(wait);
  }(gate));
  // The loop answers while the blocking section is still waiting.
  auto ping = loop.submit([] { return 1; });
  REQUIRE(ping.wait_for(kWait));
  CHECK(ping.get() == 1);
  CHECK_FALSE(blocked.is_done());
  release.set_value();
  REQUIRE(blocked.wait_for(kWait));
  CHECK(blocked.get() == 7);
}

TEST_CASE("10,000 blocking sections from a loop reuse a handful of cached threads") {
  EventLoop loop;
  auto before = default_blocker_cache().threads_created();
  auto f = loop.spawn([]() -> Task<int> {
    int sum = 0;
    for (int i = 0; i < 10000; ++i) sum += co_await blocking([] { return 1; });
    co_return sum;
  }());
  REQUIRE(f.wait_for(60s));
  CHECK(f.get() == 10000);
  // A blocker thread is back in the cache before it resumes the task, so every section after
  // the first reuses the same thread (the first may find one left idle by an earlier test).
  CHECK(default_blocker_cache().threads_created() - before <= 1);
}

TEST_CASE("an exception from fn reaches the task on its loop") {
  EventLoop loop;
  auto f = loop.spawn([](EventLoop& l) -> Task<std::string> {
    try {
      co_await blocking(
          []() -> int { throw IoError(std::make_error_code(std::errc::io_error), "disk"); });
    } catch (const IoError&) {
      co_return l.in_event_loop() ? "caught on loop" : "caught elsewhere";
    }
    co_return "none";
  }(loop));
  REQUIRE(f.wait_for(kWait));
  CHECK(f.get() == "caught on loop");
}

TEST_CASE("blocking_section on a loop thread runs fn inline") {
  EventLoop loop;
  auto f =
      loop.submit([&loop] { return blocking_section([&loop] { return loop.in_event_loop(); }); });
  REQUIRE(f.wait_for(kWait));
  CHECK(f.get());
}
