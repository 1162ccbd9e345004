// EventLoopGroup::singleton(): one process-wide group, a loop per core, that runs tasks and
// channels like any other and refuses every way of shutting it down.
#include <doctest/doctest.h>

#include <thread>

#include <trellis/pipeline/error.hpp>
#include <trellis/transport.hpp>

using namespace trellis;

TEST_CASE("EventLoopGroup::singleton is one group with a loop per core") {
  EventLoopGroup& a = EventLoopGroup::singleton();
  EventLoopGroup& b = EventLoopGroup::singleton();
  CHECK(&a == &b);
  CHECK(a.is_singleton());
  CHECK(a.size() == std::max(1u, std::thread::hardware_concurrency()));
  EventLoopGroup other(1);
  CHECK_FALSE(other.is_singleton());
}

TEST_CASE("EventLoopGroup::singleton runs tasks on its loops") {
  EventLoopGroup& group = EventLoopGroup::singleton();
  auto on_loop = [](EventLoopGroup& g) -> Task<bool> { co_return g.contains_current_thread(); };
  CHECK(group.spawn(on_loop(group)).get());
  CHECK_FALSE(group.contains_current_thread());
}

TEST_CASE("EventLoopGroup::singleton cannot be shut down or joined") {
  EventLoopGroup& group = EventLoopGroup::singleton();
  CHECK_THROWS_AS(group.shutdown_gracefully(), IllegalStateError);
  CHECK_THROWS_AS(group.join(), IllegalStateError);
  CHECK_THROWS_AS(group[0].shutdown_gracefully(), IllegalStateError);
  CHECK_THROWS_AS(group[0].join(), IllegalStateError);
  // Still running.
  CHECK_FALSE(group[0].is_shutting_down());
  auto one = []() -> Task<int> { co_return 1; };
  CHECK(group.spawn(one()).get() == 1);
}
