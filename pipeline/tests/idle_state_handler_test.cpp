// Tests of IdleStateHandler on the embedded channel's virtual clock: exact deadlines, activity
// resetting them, repeated events, stopping on close and removal, no timer work per read, and
// the heartbeat example of docs/handlers.md.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <trellis/pipeline/idle_state_handler.hpp>
#include <trellis/testing/doctest_helpers.hpp>
#include <trellis/testing/embedded_channel.hpp>

#include "examples/heartbeat.hpp"

using namespace trellis;
using namespace std::chrono_literals;

namespace {

// The idle events that reached the tail since the last call (other user events are dropped).
std::vector<IdleStateEvent> take_idle_events(EmbeddedChannel& ch) {
  std::vector<IdleStateEvent> out;
  while (!ch.user_events().empty()) {
    Message m = ch.user_events().take_front();
    if (auto* e = m.try_get<IdleStateEvent>()) out.push_back(*e);
  }
  return out;
}

// Adds handler to an active channel whose clock is frozen first, so deadlines are exact.
template <class H>
std::shared_ptr<H> add_frozen(EmbeddedChannel& ch, std::shared_ptr<H> handler) {
  ch.freeze_time();
  ch.pipeline().add_last("idle", handler);
  return handler;
}

const IdleStateEvent kReaderFirst{IdleState::reader_idle, true};
const IdleStateEvent kReaderNext{IdleState::reader_idle, false};
const IdleStateEvent kWriterFirst{IdleState::writer_idle, true};
const IdleStateEvent kWriterNext{IdleState::writer_idle, false};
const IdleStateEvent kAllFirst{IdleState::all_idle, true};

}  // namespace

TEST_CASE("reader idle fires exactly at its deadline, then every further period") {
  EmbeddedChannel ch;
  add_frozen(ch, std::make_shared<IdleStateHandler>(10s, 0s, 0s));
  ch.advance_by(10s - 1ns);
  CHECK(take_idle_events(ch).empty());
  ch.advance_by(1ns);
  CHECK(take_idle_events(ch) == std::vector{kReaderFirst});
  ch.advance_by(10s - 1ns);
  CHECK(take_idle_events(ch).empty());
  ch.advance_by(1ns);
  CHECK(take_idle_events(ch) == std::vector{kReaderNext});
  ch.advance_by(20s);
  CHECK(take_idle_events(ch) == std::vector{kReaderNext, kReaderNext});
  CHECK_FALSE(ch.finish());
}

TEST_CASE("idle detection starts on channel_active when added before registration") {
  EmbeddedChannel ch{EmbeddedChannel::Options{.register_channel = false},
                     std::make_shared<IdleStateHandler>(0s, 0s, 5s)};
  ch.freeze_time();
  ch.advance_by(1h);
  CHECK(take_idle_events(ch).empty());  // not active yet: nothing armed
  CHECK(ch.event_loop().scheduled_task_count() == 0);
  ch.register_channel();
  ch.advance_by(5s - 1ns);
  CHECK(take_idle_events(ch).empty());
  ch.advance_by(1ns);
  CHECK(take_idle_events(ch) == std::vector{kAllFirst});
  CHECK_FALSE(ch.finish());
}

TEST_CASE("a read resets reader idleness and makes the next event a first one") {
  EmbeddedChannel ch;
  add_frozen(ch, std::make_shared<IdleStateHandler>(10s, 0s, 0s));
  ch.advance_by(6s);
  CHECK(ch.write_inbound(ByteBuf::from("x")));  // read at 6 s: idle from 16 s
  ch.advance_by(10s - 1ns);
  CHECK(take_idle_events(ch).empty());
  ch.advance_by(1ns);
  CHECK(take_idle_events(ch) == std::vector{kReaderFirst});
  ch.advance_by(10s);
  CHECK(take_idle_events(ch) == std::vector{kReaderNext});
  ch.advance_by(3s);
  CHECK(ch.write_inbound(ByteBuf::from("y")));
  ch.advance_by(10s);
  CHECK(take_idle_events(ch) == std::vector{kReaderFirst});
  CHECK(ch.finish_and_release_all());
}

TEST_CASE("a read batch in progress counts as activity until its read_complete") {
  EmbeddedChannel ch;
  add_frozen(ch, std::make_shared<IdleStateHandler>(10s, 0s, 0s));
  ch.pipeline().fire_channel_read(ByteBuf::from("partial"));  // no read_complete yet
  ch.advance_by(25s);
  CHECK(take_idle_events(ch).empty());
  ch.pipeline().fire_channel_read_complete();  // the batch ends at 25 s
  ch.advance_by(10s - 1ns);
  CHECK(take_idle_events(ch).empty());
  // The timer re-armed at 30 s for a full period (reading), so it looks again at 40 s.
  ch.advance_by(5s + 1ns);
  CHECK(take_idle_events(ch) == std::vector{kReaderFirst});
  CHECK(ch.finish_and_release_all());
}

TEST_CASE("a completed write resets writer idleness") {
  EmbeddedChannel ch;
  add_frozen(ch, std::make_shared<IdleStateHandler>(0s, 10s, 0s));
  ch.advance_by(4s);
  CHECK(ch.write_outbound(ByteBuf::from("out")));
  ch.advance_by(10s - 1ns);
  CHECK(take_idle_events(ch).empty());
  ch.advance_by(1ns);
  CHECK(take_idle_events(ch) == std::vector{kWriterFirst});
  ch.advance_by(10s);
  CHECK(take_idle_events(ch) == std::vector{kWriterNext});
  CHECK(ch.finish_and_release_all());
}

TEST_CASE("all idle needs neither reads nor writes for the whole period") {
  EmbeddedChannel ch;
  add_frozen(ch, std::make_shared<IdleStateHandler>(0s, 0s, 10s));
  ch.advance_by(3s);
  CHECK(ch.write_inbound(ByteBuf::from("in")));  // 3 s
  ch.advance_by(4s);
  CHECK(ch.write_outbound(ByteBuf::from("out")));  // 7 s: idle from 17 s
  ch.advance_by(10s - 1ns);
  CHECK(take_idle_events(ch).empty());
  ch.advance_by(1ns);
  CHECK(take_idle_events(ch) == std::vector{kAllFirst});
  CHECK(ch.finish_and_release_all());
}

TEST_CASE("the three kinds fire independently") {
  EmbeddedChannel ch;
  add_frozen(ch, std::make_shared<IdleStateHandler>(10s, 20s, 30s));
  ch.advance_by(30s);
  auto events = take_idle_events(ch);
  // Reader idle at 10, 20 and 30 s, writer idle at 20 s, all idle at 30 s (the order of events
  // with the same deadline is the order their timers were armed in).
  auto count = [&](IdleStateEvent e) { return std::count(events.begin(), events.end(), e); };
  CHECK(events.size() == 5);
  CHECK(events.front() == kReaderFirst);
  CHECK(count(kReaderNext) == 2);
  CHECK(count(kWriterFirst) == 1);
  CHECK(count(kAllFirst) == 1);
  CHECK_FALSE(ch.finish());
}

TEST_CASE("timeouts of minutes run in virtual time") {
  EmbeddedChannel ch;
  add_frozen(ch, std::make_shared<IdleStateHandler>(5min, 0s, 0s));
  ch.advance_by(5min - 1ns);
  CHECK(take_idle_events(ch).empty());
  ch.advance_by(1ns);
  CHECK(take_idle_events(ch) == std::vector{kReaderFirst});
  ch.advance_by(24h);  // 288 more periods, no wall-clock wait
  CHECK(take_idle_events(ch).size() == 288);
  CHECK_FALSE(ch.finish());
}

TEST_CASE("idle events stop when the channel closes") {
  EmbeddedChannel ch;
  add_frozen(ch, std::make_shared<IdleStateHandler>(10s, 10s, 10s));
  ch.advance_by(5s);
  ch.close();
  CHECK(ch.event_loop().scheduled_task_count() == 0);
  ch.advance_by(1h);
  CHECK(take_idle_events(ch).empty());
}

TEST_CASE("removing the handler cancels its timers") {
  EmbeddedChannel ch;
  auto handler = add_frozen(ch, std::make_shared<IdleStateHandler>(10s, 10s, 10s));
  CHECK(ch.event_loop().scheduled_task_count() == 3);
  ch.advance_by(10s);
  CHECK(take_idle_events(ch).size() == 3);
  ch.pipeline().remove(*handler);
  CHECK(ch.event_loop().scheduled_task_count() == 0);
  ch.advance_by(1h);
  CHECK(take_idle_events(ch).empty());
  // A removed handler stays stopped even if added again.
  ch.pipeline().add_last(handler);
  ch.advance_by(1h);
  CHECK(take_idle_events(ch).empty());
  CHECK_FALSE(ch.finish());
}

TEST_CASE("reads touch no timer: the idle timers re-arm only when they fire") {
  EmbeddedChannel ch;
  add_frozen(ch, std::make_shared<IdleStateHandler>(10s, 10s, 10s));
  auto& loop = ch.event_loop();
  CHECK(loop.scheduled_task_count() == 3);
  const auto scheduled = loop.schedule_calls();
  const auto cancelled = loop.cancel_calls();
  for (int i = 0; i < 1000; ++i) {
    ch.write_inbound(ByteBuf::from("m"));
    ch.advance_by(1ms);  // the last read is at 1 s - 1 ms
  }
  CHECK(loop.schedule_calls() == scheduled);
  CHECK(loop.cancel_calls() == cancelled);
  CHECK(loop.scheduled_task_count() == 3);
  ch.inbound_messages().clear();
  // At 10 s: the writer is idle, reader and all have 1 s - 1 ms left. Each timer re-armed once.
  ch.advance_by(9s);
  CHECK(take_idle_events(ch) == std::vector{kWriterFirst});
  CHECK(loop.schedule_calls() == scheduled + 3);
  CHECK(loop.cancel_calls() == cancelled);
  ch.advance_by(1s - 2ms);
  CHECK(take_idle_events(ch).empty());
  ch.advance_by(1ms);  // 10 s after the last read
  auto events = take_idle_events(ch);
  CHECK(events == std::vector{kReaderFirst, kAllFirst});
  CHECK_FALSE(ch.finish());
}

TEST_CASE("observe_output: a slow write that makes progress is not writer idleness") {
  auto run = [](bool observe) {
    EmbeddedChannel ch;
    add_frozen(ch, std::make_shared<IdleStateHandler>(observe, 0s, 10s, 0s));
    ch.set_outbound_byte_budget(0);  // the peer reads nothing for now
    ch.write_outbound(ByteBuf::from(std::string(100, 'x')));
    std::vector<IdleStateEvent> events;
    ch.advance_by(10s);  // 10 s: the write has not started
    for (int i = 0; i < 2; ++i) {
      ch.add_outbound_byte_budget(10);  // the peer takes 10 bytes in each of the next periods
      ch.advance_by(10s);               // 20 s, 30 s
    }
    ch.advance_by(10s);  // 40 s: no progress in this period
    for (auto e : take_idle_events(ch)) events.push_back(e);
    ch.finish_and_release_all();
    return events;
  };
  // Without observe_output every period is idle: the write has not completed.
  CHECK(run(false) == std::vector{kWriterFirst, kWriterNext, kWriterNext, kWriterNext});
  // With it, the first event still fires (as in Netty), then progress counts as activity until
  // a period passes without any.
  CHECK(run(true) == std::vector{kWriterFirst, kWriterNext});
}

TEST_CASE("a watched write still completes the writer's promise") {
  EmbeddedChannel ch;
  add_frozen(ch, std::make_shared<IdleStateHandler>(0s, 10s, 10s));
  Promise<void> done(&ch.event_loop());
  ch.write_and_flush(ByteBuf::from("out"), done);
  ch.run_pending_tasks();
  CHECK(done.future().is_success());

  ch.set_outbound_byte_budget(0);
  Promise<void> failed(&ch.event_loop());
  ch.write_and_flush(ByteBuf::from("stuck"), failed);
  ch.close();
  REQUIRE(failed.future().is_done());
  CHECK_THROWS_AS(failed.future().get(), ClosedChannelError);
  CHECK(ch.exceptions().empty());
  ch.finish_and_release_all();
}

TEST_CASE("the heartbeat example pings a quiet peer and drops a silent one") {
  EmbeddedChannel ch;
  ch.freeze_time();
  heartbeat::add_heartbeat(ch.pipeline());
  ch.advance_by(10s - 1ns);
  CHECK(ch.outbound_messages().empty());
  ch.advance_by(1ns);
  CHECK(testing::read_outbound_string(ch) == "PING\n");
  ch.advance_by(10s);
  CHECK(testing::read_outbound_string(ch) == "PING\n");
  ch.advance_by(5s);
  CHECK(ch.write_inbound(ByteBuf::from("PONG\n")));  // 25 s: the peer is alive
  ch.advance_by(5s);                                 // 30 s: a ping, no close
  CHECK(testing::read_outbound_string(ch) == "PING\n");
  CHECK(ch.is_open());
  ch.advance_by(25s - 1ns);  // 55 s - 1 ns: two more pings
  CHECK(testing::drain_outbound_bytes(ch) == "PING\nPING\n");
  CHECK(ch.is_open());
  ch.advance_by(1ns);  // 30 s after the last read
  CHECK_FALSE(ch.is_open());
  CHECK(ch.finish_and_release_all());
}

TEST_CASE("docs/handlers.md shows the heartbeat example as compiled here") {
  const auto here = std::filesystem::path(__FILE__).parent_path();
  const auto example_path = here / "examples" / "heartbeat.hpp";
  const auto doc_path = here / ".." / ".." / "docs" / "handlers.md";
  if (!std::filesystem::exists(example_path) || !std::filesystem::exists(doc_path)) return;
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string example = slurp(example_path);
  CHECK_FALSE(example.empty());
  CHECK(slurp(doc_path).find(example) != std::string::npos);
}
