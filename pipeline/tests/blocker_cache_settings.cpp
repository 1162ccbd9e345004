// configure_default_blocker_cache(): default_blocker_cache() is process-wide, so these cases live
// in an executable of their own (not pipeline_tests), and ctest runs each case in a fresh process.
// Run directly, the cases run in file order: the first configures the cache before its first use.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <trellis/pipeline/blocking.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/promise.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {

// Waits (up to 10 s) until pred() holds.
template <class Pred>
bool eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// The code of docs/blocking.md's "The default blocker cache".
void configure_as_documented() {
  trellis::configure_default_blocker_cache(
      {.keep_alive = std::chrono::seconds(10), .max_threads = 64});
}

}  // namespace

TEST_CASE("settings given before the first use bound the threads and their keep-alive") {
  configure_default_blocker_cache({.keep_alive = 50ms, .max_threads = 2});
  auto& cache = default_blocker_cache();
  CHECK(cache.max_threads() == 2);
  CHECK(cache.keep_alive() == 50ms);

  // Three calls that block until released: two threads run two of them, the third waits.
  Promise<void> release;
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  for (int i = 0; i < 3; ++i) {
    UniqueFunction<void()> job = [&, future = release.future()] {
      ++started;
      future.wait();
      ++finished;
    };
    REQUIRE(cache.run(job));
  }
  REQUIRE(eventually([&] { return started == 2; }));
  std::this_thread::sleep_for(20ms);  // a third thread, if any were started, would run by now
  CHECK(started == 2);
  CHECK(cache.live_threads() == 2);
  CHECK(cache.threads_created() == 2);
  release.set_value();
  REQUIRE(eventually([&] { return finished == 3; }));
  CHECK(cache.threads_created() == 2);
  // Idle threads exit after the 50 ms keep-alive (the default would keep them for 60 s).
  CHECK(eventually([&] { return cache.live_threads() == 0; }));
}

TEST_CASE("configuring the cache once it is in use is refused") {
  (void)default_blocker_cache();
  CHECK_THROWS_AS(configure_as_documented(), IllegalStateError);
  CHECK_THROWS_AS(configure_default_blocker_cache({}), IllegalStateError);
}

TEST_CASE("a cache without threads or with a negative keep-alive is refused") {
  CHECK_THROWS_AS(configure_default_blocker_cache({.keep_alive = 1s, .max_threads = 0}),
                  InvalidArgumentError);
  CHECK_THROWS_AS(configure_default_blocker_cache({.keep_alive = -1s, .max_threads = 4}),
                  InvalidArgumentError);
}
