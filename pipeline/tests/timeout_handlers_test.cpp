// Tests of ReadTimeoutHandler and WriteTimeoutHandler on the embedded channel's virtual clock.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>

#include <trellis/pipeline/read_timeout_handler.hpp>
#include <trellis/pipeline/write_timeout_handler.hpp>
#include <trellis/testing/doctest_helpers.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {

template <class E>
bool holds(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const E&) {
    return true;
  } catch (...) {
    return false;
  }
}

template <class H>
std::shared_ptr<H> add_frozen(EmbeddedChannel& ch, std::shared_ptr<H> handler) {
  ch.freeze_time();
  ch.pipeline().add_last("timeout", handler);
  return handler;
}

}  // namespace

TEST_CASE("ReadTimeoutHandler fires ReadTimeoutError exactly at its deadline, then closes") {
  EmbeddedChannel ch;
  add_frozen(ch, std::make_shared<ReadTimeoutHandler>(30s));
  ch.advance_by(30s - 1ns);
  CHECK(ch.is_open());
  CHECK(ch.exceptions().empty());
  ch.advance_by(1ns);
  CHECK_FALSE(ch.is_open());
  REQUIRE(ch.exceptions().size() == 1);
  CHECK(holds<ReadTimeoutError>(ch.exceptions()[0]));
  CHECK_THROWS_AS(ch.check_exception(), ReadTimeoutError);
  ch.advance_by(1h);  // once only
  CHECK(ch.exceptions().size() == 1);
}

TEST_CASE("ReadTimeoutHandler is reset by reads and works in minutes") {
  EmbeddedChannel ch;
  add_frozen(ch, std::make_shared<ReadTimeoutHandler>(2min));
  for (int i = 0; i < 10; ++i) {
    ch.advance_by(1min);
    CHECK(ch.write_inbound(ByteBuf::from("keep-alive")));
  }
  ch.advance_by(2min - 1ns);
  CHECK(ch.is_open());
  ch.advance_by(1ns);
  CHECK_FALSE(ch.is_open());
  CHECK_THROWS_AS(ch.check_exception(), ReadTimeoutError);
  ch.finish_and_release_all();
}

TEST_CASE("ReadTimeoutHandler is silent after removal and after close") {
  {
    EmbeddedChannel ch;
    auto handler = add_frozen(ch, std::make_shared<ReadTimeoutHandler>(1s));
    ch.pipeline().remove(*handler);
    CHECK(ch.event_loop().scheduled_task_count() == 0);
    ch.advance_by(1h);
    CHECK(ch.is_open());
    CHECK(ch.exceptions().empty());
    CHECK_FALSE(ch.finish());
  }
  {
    EmbeddedChannel ch;
    add_frozen(ch, std::make_shared<ReadTimeoutHandler>(1s));
    ch.close();
    ch.advance_by(1h);
    CHECK(ch.exceptions().empty());
  }
}

TEST_CASE("WriteTimeoutHandler fails a write not done in time and closes the channel") {
  EmbeddedChannel ch;
  auto handler = add_frozen(ch, std::make_shared<WriteTimeoutHandler>(5s));
  ch.set_outbound_byte_budget(0);  // the peer reads nothing
  Promise<void> promise(&ch.event_loop());
  ch.write_and_flush(ByteBuf::from("stuck"), promise);
  CHECK(handler->pending_writes() == 1);
  ch.advance_by(5s - 1ns);
  CHECK_FALSE(promise.future().is_done());
  CHECK(ch.is_open());
  ch.advance_by(1ns);
  REQUIRE(promise.future().is_done());
  CHECK_THROWS_AS(promise.future().get(), WriteTimeoutError);
  CHECK_FALSE(ch.is_open());
  CHECK(handler->pending_writes() == 0);
  // The failure went to the promise, not to exception_caught.
  CHECK(ch.exceptions().empty());
  ch.finish_and_release_all();
}

TEST_CASE("WriteTimeoutHandler: a write without a promise times out as exception_caught") {
  EmbeddedChannel ch;
  add_frozen(ch, std::make_shared<WriteTimeoutHandler>(5min));
  ch.set_outbound_byte_budget(0);
  ch.write_outbound(ByteBuf::from("stuck"));
  ch.advance_by(5min - 1ns);
  CHECK(ch.exceptions().empty());
  ch.advance_by(1ns);
  CHECK_FALSE(ch.is_open());
  // Only WriteTimeoutError: the queued write failing with ClosedChannelError is not reported.
  REQUIRE(ch.exceptions().size() == 1);
  CHECK(holds<WriteTimeoutError>(ch.exceptions()[0]));
  CHECK_THROWS_AS(ch.check_exception(), WriteTimeoutError);
  ch.finish_and_release_all();
}

TEST_CASE("WriteTimeoutHandler cancels the timer when the write completes") {
  EmbeddedChannel ch;
  auto handler = add_frozen(ch, std::make_shared<WriteTimeoutHandler>(5s));
  Promise<void> promise(&ch.event_loop());
  ch.write_and_flush(ByteBuf::from("fast"), promise);
  CHECK(promise.future().is_success());
  CHECK(handler->pending_writes() == 0);
  CHECK(ch.event_loop().scheduled_task_count() == 0);

  // A slow write that the peer takes before the deadline.
  ch.set_outbound_byte_budget(0);
  ch.write_outbound(ByteBuf::from("slow"));
  CHECK(ch.event_loop().scheduled_task_count() == 1);
  ch.advance_by(4s);
  ch.set_outbound_byte_budget(std::nullopt);
  CHECK(ch.event_loop().scheduled_task_count() == 0);
  ch.advance_by(1h);
  CHECK(ch.is_open());
  CHECK(ch.exceptions().empty());
  CHECK(testing::drain_outbound_bytes(ch) == "fastslow");
  CHECK_FALSE(ch.finish());
}

TEST_CASE("WriteTimeoutHandler times each write from its own start and closes once") {
  EmbeddedChannel ch;
  add_frozen(ch, std::make_shared<WriteTimeoutHandler>(5s));
  ch.set_outbound_byte_budget(0);
  Promise<void> first(&ch.event_loop());
  Promise<void> second(&ch.event_loop());
  ch.write_and_flush(ByteBuf::from("a"), first);
  ch.advance_by(2s);
  ch.write_and_flush(ByteBuf::from("b"), second);
  ch.advance_by(3s);  // 5 s after the first write
  CHECK_THROWS_AS(first.future().get(), WriteTimeoutError);
  CHECK_FALSE(ch.is_open());
  // The second failed with the close, before its own deadline.
  CHECK_THROWS_AS(second.future().get(), ClosedChannelError);
  ch.advance_by(1h);
  CHECK(ch.exceptions().empty());
  ch.finish_and_release_all();
}

TEST_CASE("WriteTimeoutHandler removal cancels the timers of pending writes") {
  EmbeddedChannel ch;
  auto handler = add_frozen(ch, std::make_shared<WriteTimeoutHandler>(5s));
  ch.set_outbound_byte_budget(0);
  Promise<void> promise(&ch.event_loop());
  ch.write_and_flush(ByteBuf::from("stuck"), promise);
  ch.pipeline().remove(*handler);
  CHECK(handler->pending_writes() == 0);
  CHECK(ch.event_loop().scheduled_task_count() == 0);
  ch.advance_by(1h);
  CHECK(ch.is_open());
  CHECK_FALSE(promise.future().is_done());
  ch.set_outbound_byte_budget(std::nullopt);  // the write completes after all
  CHECK(promise.future().is_success());
  CHECK(testing::read_outbound_string(ch) == "stuck");
  CHECK_FALSE(ch.finish());
}
