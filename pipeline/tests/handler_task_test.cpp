// Coroutines inside handlers: ctx.spawn (exceptions, cancellation when the channel goes inactive)
// and awaited writes (ctx.write_async / write_and_flush_async), on an EmbeddedChannel.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <trellis/pipeline.hpp>
#include <trellis/testing.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;
using namespace std::chrono_literals;
using trellis::testing::AllocationScope;

namespace {

struct TaskLog {
  std::vector<std::string> events;
  std::uint64_t allocations = 0;
};

using Body = Task<void> (*)(ChannelHandlerContext&, TaskLog&);

// Spawns body(ctx, log) for each message it reads (or when the channel goes inactive).
class Spawner final : public ChannelInboundHandler {
 public:
  Spawner(Body body, std::shared_ptr<TaskLog> log, bool on_inactive = false)
      : body_(body), log_(std::move(log)), on_inactive_(on_inactive) {}
  void channel_read(ChannelHandlerContext& ctx, Message) override {
    if (!on_inactive_) futures.push_back(ctx.spawn(body_(ctx, *log_)));
  }
  void channel_inactive(ChannelHandlerContext& ctx) override {
    if (on_inactive_) futures.push_back(ctx.spawn(body_(ctx, *log_)));
    ctx.fire_channel_inactive();
  }
  std::vector<Future<void>> futures;

 private:
  Body body_;
  std::shared_ptr<TaskLog> log_;
  bool on_inactive_;
};

// Records the exceptions it is given (and does not pass them on).
class Catcher final : public ChannelInboundHandler {
 public:
  void exception_caught(ChannelHandlerContext&, std::exception_ptr error) override {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      caught.emplace_back(e.what());
    }
  }
  std::vector<std::string> caught;
};

class FailingWrites final : public ChannelOutboundHandler {
 public:
  void write(ChannelHandlerContext&, Message, ChannelPromise promise) override {
    promise.try_set_exception(IoError(std::make_error_code(std::errc::broken_pipe), "write"));
  }
};

// Drops writes and their promises without completing them (a broken handler).
class DroppingWrites final : public ChannelOutboundHandler {
 public:
  void write(ChannelHandlerContext&, Message, ChannelPromise) override {}
};

Task<void> write_two(ChannelHandlerContext& ctx, TaskLog& log) {
  co_await ctx.write_and_flush_async(1);
  log.events.push_back("first written");
  co_await ctx.write_and_flush_async(2);
  log.events.push_back("second written");
}

Task<void> write_unflushed(ChannelHandlerContext& ctx, TaskLog& log) {
  co_await ctx.write_async(std::string("later"));
  log.events.push_back("written");
}

Task<void> write_and_catch(ChannelHandlerContext& ctx, TaskLog& log) {
  try {
    co_await ctx.write_and_flush_async(1);
    log.events.push_back("no failure");
  } catch (const IoError& e) {
    log.events.push_back(std::string("failed: ") + e.what());
  } catch (const IllegalStateError& e) {
    log.events.push_back(std::string("dropped: ") + e.what());
  }
}

Task<void> sleep_then_throw(ChannelHandlerContext&, TaskLog& log) {
  co_await sleep_for(1s);
  log.events.push_back("woke");
  throw InvalidArgumentError("task failed");
}

Task<void> sleep_long(ChannelHandlerContext&, TaskLog& log) {
  try {
    co_await sleep_for(1h);
    log.events.push_back("slept");
  } catch (const CancelledError&) {
    log.events.push_back("cancelled");
    throw;
  }
}

Task<void> record_run(ChannelHandlerContext&, TaskLog& log) {
  log.events.push_back("ran");
  co_return;
}

Task<void> write_many(ChannelHandlerContext& ctx, TaskLog& log) {
  for (int i = 0; i < 1'000; ++i) co_await ctx.write_and_flush_async(i);
  log.events.push_back("warm");
  co_await sleep_for(1s);  // the test empties the outbound queue meanwhile (keeping its memory)
  AllocationScope scope;
  for (int i = 0; i < 1'000; ++i) co_await ctx.write_and_flush_async(i);
  log.allocations = scope.count();
  log.events.push_back("measured");
}

}  // namespace

TEST_CASE("ctx.spawn runs a task on the channel's loop whose awaited writes complete inline") {
  auto log = std::make_shared<TaskLog>();
  auto spawner = std::make_shared<Spawner>(&write_two, log);
  EmbeddedChannel ch{spawner};
  ch.write_inbound(0);
  REQUIRE(spawner->futures.size() == 1);
  CHECK(spawner->futures[0].is_success());
  CHECK(log->events == std::vector<std::string>{"first written", "second written"});
  CHECK(ch.read_outbound<int>() == 1);
  CHECK(ch.read_outbound<int>() == 2);
}

TEST_CASE("write_async completes once the write was flushed and written") {
  auto log = std::make_shared<TaskLog>();
  auto spawner = std::make_shared<Spawner>(&write_unflushed, log);
  EmbeddedChannel ch{spawner};
  ch.write_inbound(0);
  CHECK(log->events.empty());
  CHECK(ch.outbound_messages().empty());
  ch.flush();
  CHECK(log->events == std::vector<std::string>{"written"});
  CHECK(ch.read_outbound<std::string>() == "later");
}

TEST_CASE("an awaited write rethrows the write's failure") {
  auto log = std::make_shared<TaskLog>();
  EmbeddedChannel ch{std::make_shared<FailingWrites>(),
                     std::make_shared<Spawner>(&write_and_catch, log)};
  ch.write_inbound(0);
  REQUIRE(log->events.size() == 1);
  CHECK(log->events[0].starts_with("failed: write"));
}

TEST_CASE("an awaited write whose promise a handler dropped throws IllegalStateError") {
  auto log = std::make_shared<TaskLog>();
  EmbeddedChannel ch{std::make_shared<DroppingWrites>(),
                     std::make_shared<Spawner>(&write_and_catch, log)};
  ch.write_inbound(0);
  REQUIRE(log->events.size() == 1);
  CHECK(log->events[0].starts_with("dropped: "));
}

TEST_CASE("an exception escaping a ctx.spawn task reaches exception_caught of the next handler") {
  auto log = std::make_shared<TaskLog>();
  auto before = std::make_shared<Catcher>();
  auto after = std::make_shared<Catcher>();
  auto spawner = std::make_shared<Spawner>(&sleep_then_throw, log);
  EmbeddedChannel ch{before, spawner, after};
  ch.freeze_time();
  ch.write_inbound(0);
  CHECK(after->caught.empty());
  ch.advance_by(1s);
  CHECK(log->events == std::vector<std::string>{"woke"});
  CHECK(before->caught.empty());
  CHECK(after->caught == std::vector<std::string>{"task failed"});
  REQUIRE(spawner->futures[0].is_done());
  CHECK_THROWS_AS(spawner->futures[0].get(), InvalidArgumentError);
  CHECK_NOTHROW(ch.check_exception());
}

TEST_CASE("a ctx.spawn task is cancelled when the channel goes inactive") {
  auto log = std::make_shared<TaskLog>();
  auto after = std::make_shared<Catcher>();
  auto spawner = std::make_shared<Spawner>(&sleep_long, log);
  EmbeddedChannel ch{spawner, after};
  ch.freeze_time();
  ch.write_inbound(0);
  CHECK(log->events.empty());
  ch.close();
  CHECK(log->events == std::vector<std::string>{"cancelled"});
  REQUIRE(spawner->futures[0].is_done());
  CHECK(spawner->futures[0].is_cancelled());
  CHECK(after->caught.empty());  // a cancellation is not the handler's fault
}

TEST_CASE("ctx.spawn on a closed channel cancels the task before it runs") {
  auto log = std::make_shared<TaskLog>();
  auto spawner = std::make_shared<Spawner>(&record_run, log, /*on_inactive=*/true);
  EmbeddedChannel ch{spawner};
  ch.close();
  REQUIRE(spawner->futures.size() == 1);
  CHECK(spawner->futures[0].is_cancelled());
  CHECK(log->events.empty());
}

TEST_CASE("an exception from a task whose handler was removed enters the pipeline at the head") {
  auto log = std::make_shared<TaskLog>();
  auto spawner = std::make_shared<Spawner>(&sleep_then_throw, log);
  EmbeddedChannel ch{spawner};
  ch.freeze_time();
  ch.write_inbound(0);
  ch.pipeline().remove(*spawner);
  ch.run_pending_tasks();  // the removed context would be freed here were it not pinned
  ch.advance_by(1s);
  CHECK(log->events == std::vector<std::string>{"woke"});
  CHECK_THROWS_WITH_AS(ch.check_exception(), "task failed", InvalidArgumentError);
}

TEST_CASE("an awaited write allocates nothing") {
  auto log = std::make_shared<TaskLog>();
  auto spawner = std::make_shared<Spawner>(&write_many, log);
  EmbeddedChannel ch{spawner};
  ch.freeze_time();
  ch.write_inbound(0);
  REQUIRE(log->events == std::vector<std::string>{"warm"});
  ch.outbound_messages().clear();
  ch.advance_by(1s);
  REQUIRE(log->events == std::vector<std::string>{"warm", "measured"});
  CHECK(log->allocations == 0);
  CHECK(ch.outbound_messages().size() == 1'000);
}
