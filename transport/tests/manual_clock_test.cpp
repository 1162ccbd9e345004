// ManualClock (the clock of EventLoopOptions): moves only when advanced, never backwards, and
// tells its subscribers (the loops) each time.
#include <doctest/doctest.h>

#include <chrono>
#include <limits>
#include <stdexcept>

#include <trellis/pipeline/manual_clock.hpp>

using namespace std::chrono_literals;
using trellis::ManualClock;

TEST_CASE("ManualClock starts where told and moves only by advance_by") {
  ManualClock clock(3s);
  CHECK(clock.now() == 3s);
  CHECK(clock.now_nanos() == 3'000'000'000);
  clock.advance_by(1ns);
  clock.advance_by(0ns);
  CHECK(clock.now() == 3s + 1ns);
  CHECK_THROWS_AS(clock.advance_by(-1ns), std::invalid_argument);
  CHECK(clock.now() == 3s + 1ns);
  clock.advance_by(std::chrono::nanoseconds::max());  // saturates
  CHECK(clock.now_nanos() == std::numeric_limits<std::int64_t>::max());
}

TEST_CASE("ManualClock calls its subscribers after every advance until they unsubscribe") {
  ManualClock clock;
  int a = 0;
  int b = 0;
  std::int64_t seen = -1;
  auto id_a = clock.subscribe([&] {
    ++a;
    seen = clock.now_nanos();
  });
  clock.subscribe([&] { ++b; });
  clock.advance_by(5ns);
  CHECK(a == 1);
  CHECK(b == 1);
  CHECK(seen == 5);  // subscribers see the new time
  clock.unsubscribe(id_a);
  clock.advance_by(5ns);
  CHECK(a == 1);
  CHECK(b == 2);
}
