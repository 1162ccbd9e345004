// install_event_loop_group_as_default_executor: default_executor() hands out the group's loops.
// The install is process-wide and refused once the pool was handed out, so the case that
// installs comes first in this file (ctest runs each case in its own process anyway).
#include <doctest/doctest.h>

#include <set>
#include <thread>

#include <trellis/transport.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {
bool is_loop_of(EventLoopGroup& group, const EventExecutor* ex) {
  for (auto& loop : group) {
    if (&loop == ex) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("an installed group's loops are what default_executor() hands out, without hops") {
  {
    EventLoopGroup group(2);
    REQUIRE(install_event_loop_group_as_default_executor(group));
    EventLoopGroup other(1);
    CHECK_FALSE(install_event_loop_group_as_default_executor(other));  // one at a time
    // Off the loops: round robin over the group.
    std::set<const EventExecutor*> seen;
    for (int i = 0; i < 4; ++i) {
      auto* ex = &default_executor();
      CHECK(is_loop_of(group, ex));
      seen.insert(ex);
    }
    CHECK(seen.size() == 2);
    // A task spawned there stays on its loop across suspensions, and on a loop default_executor()
    // is that loop.
    auto body = [&group]() -> Task<int> {
      EventExecutor* start = current_executor();
      int same = 0;
      for (int i = 0; i < 3; ++i) {
        co_await sleep_for(1ms);
        if (current_executor() == start && start->in_event_loop()) ++same;
        if (&default_executor() == start) ++same;
      }
      co_return is_loop_of(group, start) ? same : -1;
    };
    CHECK(default_executor().spawn(body()).get() == 6);
    // EventLoopGroup::spawn starts on the next loop.
    auto where = []() -> Task<bool> { co_return current_executor()->in_event_loop(); };
    CHECK(group.spawn(where()).get());
  }
  // The destroyed group uninstalled itself: another can be installed.
  EventLoopGroup again(1);
  CHECK(install_event_loop_group_as_default_executor(again));
  CHECK(&default_executor() == &again[0]);
}

TEST_CASE("installing is refused once default_executor() handed out the pool") {
  EventExecutor& pool = default_executor();
  EventLoopGroup group(1);
  CHECK_FALSE(install_event_loop_group_as_default_executor(group));
  CHECK(&default_executor() == &pool);
  CHECK_FALSE(is_loop_of(group, &default_executor()));
}
