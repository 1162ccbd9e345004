// Tests of FlushConsolidationHandler: flushes reaching the transport are counted by an outbound
// handler between it and the head.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/flush_consolidation_handler.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;

namespace {

// Counts the flushes that pass it towards the head.
class FlushCounter : public ChannelOutboundHandler {
 public:
  int flushes = 0;
  void flush(ChannelHandlerContext& ctx) override {
    ++flushes;
    ctx.flush();
  }
};

// Answers every message with a write_and_flush of it (an application that flushes per response),
// and optionally does something more after the answer.
class FlushPerMessage : public ChannelInboundHandler {
 public:
  std::function<void(ChannelHandlerContext&)> after;
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    ctx.write_and_flush(std::move(msg));
    if (after) after(ctx);
  }
};

struct Fixture {
  std::shared_ptr<FlushCounter> counter = std::make_shared<FlushCounter>();
  std::shared_ptr<FlushConsolidationHandler> consolidation;
  std::shared_ptr<FlushPerMessage> app = std::make_shared<FlushPerMessage>();
  EmbeddedChannel ch;

  explicit Fixture(
      std::size_t after_flushes = FlushConsolidationHandler::kDefaultExplicitFlushAfterFlushes,
      bool no_read = false)
      : consolidation(std::make_shared<FlushConsolidationHandler>(after_flushes, no_read)) {
    ch.pipeline().add_last("counter", counter);
    ch.pipeline().add_last("consolidation", consolidation);
    ch.pipeline().add_last("app", app);
  }
};

}  // namespace

TEST_CASE("flushes during a read reach the transport once, at channel_read_complete") {
  Fixture f;
  f.ch.write_inbound(std::string("a"), std::string("b"), std::string("c"));
  CHECK(f.counter->flushes == 1);
  REQUIRE(f.ch.outbound_messages().size() == 3);
  CHECK(f.ch.read_outbound<std::string>() == "a");
  CHECK(f.ch.read_outbound<std::string>() == "b");
  CHECK(f.ch.read_outbound<std::string>() == "c");
  CHECK(f.consolidation->pending_flushes() == 0);
}

TEST_CASE("without the handler every response is a flush of its own") {
  auto counter = std::make_shared<FlushCounter>();
  EmbeddedChannel ch{counter, std::make_shared<FlushPerMessage>()};
  ch.write_inbound(std::string("a"), std::string("b"), std::string("c"));
  CHECK(counter->flushes == 3);
}

TEST_CASE("every explicit_flush_after_flushes-th flush of a read goes through") {
  Fixture f(2);
  f.ch.write_inbound(std::string("1"), std::string("2"), std::string("3"), std::string("4"),
                     std::string("5"));
  // after 2 and 4, then the fifth at the end of the batch
  CHECK(f.counter->flushes == 3);
  CHECK(f.ch.outbound_messages().size() == 5);
}

TEST_CASE("a flush outside a read goes through at once by default") {
  Fixture f;
  f.ch.write(std::string("x"));
  f.ch.flush();
  CHECK(f.counter->flushes == 1);
  f.ch.write(std::string("y"));
  f.ch.flush();
  CHECK(f.counter->flushes == 2);
}

TEST_CASE("consolidate_when_no_read_in_progress holds flushes until a task of the loop runs") {
  Fixture f(FlushConsolidationHandler::kDefaultExplicitFlushAfterFlushes, true);
  for (int i = 0; i < 3; ++i) {
    f.ch.write(std::string(1, static_cast<char>('a' + i)));
    f.ch.flush();
  }
  CHECK(f.counter->flushes == 0);
  CHECK(f.consolidation->pending_flushes() == 3);
  CHECK(f.ch.event_loop().pending_task_count() == 1);  // one task for all three
  f.ch.run_pending_tasks();
  CHECK(f.counter->flushes == 1);
  CHECK(f.ch.outbound_messages().size() == 3);
}

TEST_CASE("consolidate_when_no_read_in_progress still flushes at the count") {
  Fixture f(3, true);
  for (int i = 0; i < 4; ++i) {
    f.ch.write(std::string("m"));
    f.ch.flush();
  }
  CHECK(f.counter->flushes == 1);  // the third
  CHECK(f.ch.outbound_messages().size() == 3);
  f.ch.run_pending_tasks();
  CHECK(f.counter->flushes == 2);  // the fourth, by the task
  CHECK(f.ch.outbound_messages().size() == 4);
}

TEST_CASE("a queued flush task leaves a read in progress to channel_read_complete") {
  Fixture f(FlushConsolidationHandler::kDefaultExplicitFlushAfterFlushes, true);
  f.ch.write(std::string("before"));
  f.ch.flush();  // queues the task
  int flushes_when_task_ran = -1;
  f.app->after = [&](ChannelHandlerContext&) {
    if (flushes_when_task_ran < 0) {
      f.ch.run_pending_tasks();  // the task runs inside the read: it must not flush
      flushes_when_task_ran = f.counter->flushes;
    }
  };
  f.ch.write_inbound(std::string("a"), std::string("b"));
  CHECK(flushes_when_task_ran == 0);
  CHECK(f.counter->flushes == 1);
  CHECK(f.ch.outbound_messages().size() == 3);
}

TEST_CASE("held flushes are done before a close") {
  Fixture f;
  int flushes_before_close = -1;
  f.app->after = [&](ChannelHandlerContext& ctx) {
    flushes_before_close = f.counter->flushes;
    ctx.close();
  };
  f.ch.write_inbound(std::string("last words"));
  CHECK(flushes_before_close == 0);
  CHECK(f.counter->flushes == 1);
  CHECK(f.ch.read_outbound<std::string>() == "last words");
  CHECK_FALSE(f.ch.is_open());
}

TEST_CASE("held flushes are done when an exception passes") {
  Fixture f;
  int flushes_after_exception = -1;
  f.app->after = [&](ChannelHandlerContext& ctx) {
    ctx.pipeline().fire_exception_caught(std::make_exception_ptr(std::runtime_error("boom")));
    flushes_after_exception = f.counter->flushes;
  };
  CHECK_THROWS_AS(f.ch.write_inbound(std::string("a")), std::runtime_error);
  CHECK(flushes_after_exception == 1);
  CHECK(f.ch.outbound_messages().size() == 1);
}

TEST_CASE("held flushes are done when the channel turns unwritable") {
  Fixture f;
  int flushes_after_unwritable = -1;
  f.app->after = [&](ChannelHandlerContext&) {
    f.ch.set_writable(false);
    flushes_after_unwritable = f.counter->flushes;
  };
  f.ch.write_inbound(std::string("a"));
  CHECK(flushes_after_unwritable == 1);
  f.ch.set_writable(true);
  CHECK(f.ch.read_outbound<std::string>() == "a");
}

TEST_CASE("held flushes are done when the handler is removed") {
  Fixture f;
  int flushes_after_removal = -1;
  f.app->after = [&](ChannelHandlerContext& ctx) {
    ctx.pipeline().remove(*f.consolidation);
    flushes_after_removal = f.counter->flushes;
  };
  f.ch.write_inbound(std::string("a"));
  CHECK(flushes_after_removal == 1);
  CHECK(f.counter->flushes == 1);
  CHECK(f.ch.outbound_messages().size() == 1);
}

TEST_CASE("a flush task queued before the handler was removed does nothing") {
  Fixture f(FlushConsolidationHandler::kDefaultExplicitFlushAfterFlushes, true);
  f.ch.write(std::string("a"));
  f.ch.flush();
  f.ch.pipeline().remove(*f.consolidation);  // flushes what was held
  CHECK(f.counter->flushes == 1);
  std::weak_ptr<FlushConsolidationHandler> weak = f.consolidation;
  f.consolidation.reset();
  f.ch.run_pending_tasks();  // the task kept the handler alive and did nothing
  CHECK(f.counter->flushes == 1);
  CHECK(weak.expired());
}

TEST_CASE("explicit_flush_after_flushes must be positive") {
  CHECK_THROWS_AS(FlushConsolidationHandler(0), InvalidArgumentError);
}

// The first code block of the "FlushConsolidationHandler" section of docs/handlers.md (checked by
// docs.flush_consolidation_snippets).
namespace docs {

void init_flushing_channel(Channel& ch, std::shared_ptr<ChannelHandler> application) {
  // First, nearest the transport: it sees the flushes of every handler after it.
  ch.pipeline().add_last(std::make_shared<FlushConsolidationHandler>(
      /*explicit_flush_after_flushes=*/256, /*consolidate_when_no_read_in_progress=*/false));
  ch.pipeline().add_last(std::move(application));
}

}  // namespace docs

TEST_CASE("docs/handlers.md: FlushConsolidationHandler first in the pipeline") {
  EmbeddedChannel ch;
  docs::init_flushing_channel(ch, std::make_shared<FlushPerMessage>());
  auto counter = std::make_shared<FlushCounter>();
  ch.pipeline().add_first(counter);
  ch.write_inbound(std::string("1"), std::string("2"), std::string("3"), std::string("4"));
  CHECK(counter->flushes == 1);
  CHECK(ch.outbound_messages().size() == 4);
}

TEST_CASE("a batch of flushed responses allocates nothing in steady state") {
  Fixture f;
  const ByteBuf request = ByteBuf::from("request");
  auto batch = [&] {
    for (int i = 0; i < 16; ++i) f.ch.pipeline().fire_channel_read(request.share());
    f.ch.pipeline().fire_channel_read_complete();
    while (!f.ch.outbound_messages().empty()) f.ch.outbound_messages().take_front();
  };
  for (int i = 0; i < 4; ++i) batch();  // warm-up: rings and caches at their size
  const int flushes = f.counter->flushes;
  trellis::testing::AllocationScope scope;
  for (int i = 0; i < 100; ++i) batch();
  CHECK(scope.count() == 0);
  CHECK(f.counter->flushes == flushes + 100);
}
