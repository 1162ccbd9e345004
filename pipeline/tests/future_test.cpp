#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>

#include <trellis/pipeline.hpp>

using namespace trellis;
using namespace std::chrono_literals;

TEST_CASE("a promise completes its future once and reports a second completion") {
  Promise<int> p;
  auto f = p.future();
  CHECK_FALSE(f.is_done());
  p.set_value(7);
  CHECK(f.is_done());
  CHECK(f.is_success());
  CHECK(f.get() == 7);
  CHECK_FALSE(p.try_set_value(8));
  CHECK_THROWS_AS(p.set_value(9), IllegalStateError);
  CHECK_THROWS_AS(p.set_exception(std::make_exception_ptr(Error("x"))), IllegalStateError);
  CHECK(f.get() == 7);
}

TEST_CASE("a failed future rethrows its cause from get") {
  Promise<void> p;
  p.set_exception(Error("boom"));
  auto f = p.future();
  CHECK(f.is_done());
  CHECK_FALSE(f.is_success());
  CHECK(f.cause() != nullptr);
  CHECK_THROWS_WITH_AS(f.get(), "boom", Error);
}

TEST_CASE("try_set_exception takes an exception object or a pointer and completes once") {
  trellis::Promise<int> p;
  CHECK(p.try_set_exception(trellis::IllegalStateError("first")));
  CHECK_FALSE(p.try_set_exception(std::make_exception_ptr(trellis::IllegalStateError("second"))));
  CHECK_FALSE(p.try_set_value(1));
  CHECK_THROWS_WITH_AS(p.future().get(), "first", trellis::IllegalStateError);

  trellis::ChannelPromise cp = trellis::ChannelPromise::make(nullptr);
  CHECK(cp.try_set_exception(trellis::IllegalStateError("closed")));
  CHECK_FALSE(cp.try_set_value());
  CHECK_FALSE(cp.is_success());
  CHECK_FALSE(trellis::ChannelPromise{}.try_set_value());  // the void promise completes nothing
}

TEST_CASE("cancel completes a pending future with CancelledError") {
  Promise<std::string> p;
  auto f = p.future();
  CHECK(f.cancel());
  CHECK(f.is_cancelled());
  CHECK_FALSE(f.cancel());
  CHECK_FALSE(p.try_set_value("late"));
  CHECK_THROWS_AS(f.get(), CancelledError);
}

TEST_CASE("listeners run in the order they were added, inline without an executor") {
  Promise<int> p;
  auto f = p.future();
  std::string order;
  f.add_listener([&](const Future<int>& g) { order += "a" + std::to_string(g.get()); });
  f.add_listener([&](const Future<int>&) { order += "b"; });
  CHECK(order.empty());
  p.set_value(1);
  CHECK(order == "a1b");
  f.add_listener([&](const Future<int>&) { order += "c"; });
  CHECK(order == "a1bc");
}

TEST_CASE("get blocks until another thread completes the future") {
  Promise<int> p;
  auto f = p.future();
  std::thread t([p]() mutable {
    std::this_thread::sleep_for(10ms);
    p.set_value(42);
  });
  CHECK(f.get() == 42);
  t.join();
}

TEST_CASE("wait_for returns false on timeout and true once done") {
  Promise<void> p;
  auto f = p.future();
  CHECK_FALSE(f.wait_for(1ms));
  p.set_value();
  CHECK(f.wait_for(0ms));
}

TEST_CASE("get on the owning executor's thread of a pending future throws") {
  ThreadPoolExecutor pool(1);
  Promise<int> p(&pool);
  auto f = p.future();
  auto r = pool.submit([f] {
    try {
      f.get();
      return std::string("no throw");
    } catch (const BlockingOperationError&) {
      return std::string("blocking");
    }
  });
  CHECK(r.get() == "blocking");
  p.set_value(1);
}

TEST_CASE("move-only values move out of a future through an rvalue get") {
  Promise<std::unique_ptr<int>> p;
  p.set_value(std::make_unique<int>(5));
  auto v = p.future().get();
  REQUIRE(v);
  CHECK(*v == 5);
}
