// Tests of AsyncTestingEventLoop: a thread-safe loop on its own thread with virtual time.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <trellis/pipeline/awaitables.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/testing/async_testing_event_loop.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {

// The smallest channel: active from registration, writes vanish.
class NullChannel final : public Channel {
 public:
  explicit NullChannel(EventExecutor& loop) : Channel(loop) {}
  bool is_open() const override { return open_; }
  bool is_active() const override { return open_; }
  std::optional<SocketAddress> local_address() const override { return std::nullopt; }
  std::optional<SocketAddress> remote_address() const override { return std::nullopt; }
  std::atomic<int> written{0};

 protected:
  void do_bind(const SocketAddress&) override {}
  void do_connect(const SocketAddress&, const std::optional<SocketAddress>&,
                  ChannelPromise p) override {
    p.try_set_value();
  }
  void do_close() override { open_ = false; }
  void do_begin_read() override {}
  void do_write(ChannelOutboundBuffer& out) override {
    while (out.remove()) ++written;
  }

 private:
  bool open_ = true;
};

}  // namespace

TEST_CASE("work submitted from any thread runs on the loop's thread") {
  AsyncTestingEventLoop loop;
  CHECK_FALSE(loop.in_event_loop());
  std::atomic<int> count{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) loop.execute([&] { count.fetch_add(1); });
    });
  }
  for (auto& t : threads) t.join();
  loop.run();
  CHECK(count == 4000);
  CHECK(loop.submit([&] { return loop.in_event_loop(); }).get());
}

TEST_CASE("time moves only by advance_by and advance_to") {
  AsyncTestingEventLoop loop;
  CHECK(loop.current_time_nanos() == 0);
  std::atomic<bool> fired{false};
  loop.schedule(10ms, [&] { fired = true; });
  std::this_thread::sleep_for(15ms);
  loop.run();
  CHECK_FALSE(fired);
  loop.advance_by(10ms - 1ns);
  CHECK_FALSE(fired);
  loop.advance_to(10ms);
  CHECK(fired);
  CHECK(loop.current_time_nanos() == 10'000'000);
  loop.advance_to(5ms);  // the past: nothing moves
  CHECK(loop.current_time_nanos() == 10'000'000);
}

TEST_CASE("advance_by runs timers in order, each seeing its own deadline") {
  AsyncTestingEventLoop loop;
  std::vector<std::int64_t> seen;  // touched on the loop thread only
  loop.schedule(3s, [&] { seen.push_back(loop.current_time_nanos()); });
  loop.schedule(1s, [&] {
    seen.push_back(loop.current_time_nanos());
    loop.schedule(1s, [&] { seen.push_back(loop.current_time_nanos()); });
  });
  loop.advance_by(5s);
  CHECK(seen == std::vector<std::int64_t>{1'000'000'000, 2'000'000'000, 3'000'000'000});
}

TEST_CASE("run_until_idle with auto-advance finishes an hour of sleeping at once") {
  AsyncTestingEventLoop loop;
  std::atomic<int> stage{0};
  auto body = [&]() -> Task<int> {
    co_await sleep_for(1h);
    stage = 1;
    co_await sleep_for(1h);
    stage = 2;
    co_return 42;
  };
  const auto start = std::chrono::steady_clock::now();
  auto f = loop.spawn(body());
  CHECK(loop.run_until_idle(false) == 0);
  CHECK(stage == 0);
  CHECK(loop.run_until_idle(true) == 2);
  CHECK(stage == 2);
  CHECK(f.get() == 42);
  CHECK(loop.current_time_nanos() == std::chrono::nanoseconds(2h).count());
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("block_on drives a task to completion in virtual time") {
  AsyncTestingEventLoop loop;
  auto body = []() -> Task<std::string> {
    co_await sleep_for(24h);
    co_return "done";
  };
  CHECK(loop.block_on(body()) == "done");
  // A periodic task does not stop block_on from returning.
  auto ticker = loop.schedule_at_fixed_rate(1s, 1s, [] {});
  auto late = [&]() -> Task<int> {
    co_await sleep_for(10s);
    co_return 1;
  };
  CHECK(loop.block_on(late()) == 1);
  CHECK_THROWS_AS(loop.run_until_idle(true, 100), IllegalStateError);
  ticker.cancel();
}

TEST_CASE("an exception thrown by a task is rethrown by the next run") {
  AsyncTestingEventLoop loop;
  loop.execute([]() -> void { throw std::runtime_error("task failed"); });
  CHECK_THROWS_WITH(loop.run(), "task failed");
  CHECK_NOTHROW(loop.run());
}

TEST_CASE("the loop shuts down gracefully and refuses new work") {
  AsyncTestingEventLoop loop;
  auto timer = loop.schedule(1h, [] {});
  loop.shutdown_gracefully(0s, 0s).get();
  CHECK(loop.is_terminated());
  CHECK(timer.is_cancelled());
  CHECK_THROWS_AS(loop.execute([] {}), RejectedExecutionError);
}

TEST_CASE("a channel on a threaded loop is edited on its loop only and posts outbound calls") {
  AsyncTestingEventLoop loop;
  NullChannel ch(loop);
  // Before registration any thread may set the pipeline up.
  ch.pipeline().add_last("a", std::make_shared<ChannelDuplexHandler>());
  loop.submit([&] { ch.unsafe().register_channel(); }).get();
  CHECK(ch.is_registered());
  CHECK_THROWS_AS(ch.pipeline().add_last("b", std::make_shared<ChannelDuplexHandler>()),
                  IllegalStateError);
  CHECK_THROWS_AS(ch.pipeline().remove("a"), IllegalStateError);
  // From the test thread, outbound operations travel to the loop.
  auto p = ch.new_promise();
  ch.write_and_flush(ByteBuf::from("x"), p);
  ch.pipeline().context("a")->write_and_flush(ByteBuf::from("y"));
  loop.run();
  CHECK_NOTHROW(p.future().get());
  CHECK(p.is_success());
  CHECK(ch.written == 2);
  loop.submit([&] { ch.close(); }).get();
  loop.run();
  CHECK_FALSE(ch.is_registered());
}
