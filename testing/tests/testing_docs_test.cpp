// The examples of docs/testing.md ("EmbeddedChannel", "Virtual time", "AsyncTestingEventLoop"),
// compiled and run as they appear there; docs.testing_* ctest checks that they do.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>

#include <trellis/pipeline.hpp>
#include <trellis/testing.hpp>

#include <trellis/codec/line_based_frame_decoder.hpp>
#include <trellis/testing/doctest_helpers.hpp>

TEST_CASE("the line decoder splits lines") {
  trellis::testing::BufferLeakCheck leaks;
  {
    trellis::EmbeddedChannel ch{std::make_shared<trellis::codec::LineBasedFrameDecoder>(1024)};
    CHECK(ch.write_inbound(trellis::ByteBuf::from("ab\r\ncd")));
    TRELLIS_CHECK_INBOUND_STRING(ch, "ab");
    TRELLIS_CHECK_NO_MORE_INBOUND(ch);  // "cd" waits for the end of its line
    CHECK(ch.write_inbound(trellis::ByteBuf::from("\n")));
    TRELLIS_CHECK_INBOUND_STRING(ch, "cd");
    TRELLIS_CHECK_NO_MORE_INBOUND(ch);
    CHECK_FALSE(ch.finish());
  }
  TRELLIS_CHECK_NO_LEAKED_BUFFERS(leaks);
}

using namespace std::chrono_literals;

TEST_CASE("docs: reader idleness fires on virtual time, not 1 ns early") {
  trellis::EmbeddedChannel ch;
  ch.freeze_time();  // before the handler arms its timer
  ch.pipeline().add_last(std::make_shared<trellis::IdleStateHandler>(30s, 0s, 0s));
  ch.advance_by(30s - 1ns);
  CHECK(ch.user_events().empty());  // not 1 ns early
  ch.advance_by(1ns);
  REQUIRE(ch.user_events().size() == 1);
  const auto* idle = ch.user_events().front().try_get<trellis::IdleStateEvent>();
  REQUIRE(idle != nullptr);
  CHECK(*idle == trellis::IdleStateEvent{trellis::IdleState::reader_idle, true});
}

TEST_CASE("docs: block_on jumps over an hour of sleep") {
  trellis::AsyncTestingEventLoop loop;
  auto body = []() -> trellis::Task<int> {
    co_await trellis::sleep_for(std::chrono::hours(1));
    co_return 42;
  };
  CHECK(loop.block_on(body()) == 42);  // microseconds of wall time
}
