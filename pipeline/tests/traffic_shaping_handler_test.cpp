// Tests of ChannelTrafficShapingHandler and GlobalTrafficShapingHandler in virtual time: the rate
// of a long transfer, writes delayed (not dropped) in order with their promises, the bound on
// queued bytes as writability, reads paused through auto_read, one limit shared by two channels.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_config.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/pipeline/channel_traffic_shaping_handler.hpp>
#include <trellis/pipeline/detail/node_cache.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/global_traffic_shaping_handler.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t k100KBps = 100'000;

// A 10,000-byte buffer whose first byte tells it apart.
ByteBuf chunk(int i) {
  std::string s(10'000, 'x');
  s[0] = static_cast<char>('A' + i % 26);
  return ByteBuf::from(s);
}

// Counts writability changes and records the writability seen.
class WritabilityWatcher : public ChannelInboundHandler {
 public:
  std::vector<bool> seen;
  void channel_writability_changed(ChannelHandlerContext& ctx) override {
    seen.push_back(ctx.channel().is_writable());
    ctx.fire_channel_writability_changed();
  }
};

// Advances `ch` by `step` until `done()` or `limit` has passed.
template <class Done>
void advance_until(EmbeddedChannel& ch, Done done, std::chrono::nanoseconds step,
                   std::chrono::nanoseconds limit) {
  for (auto t = 0ns; t < limit && !done(); t += step) ch.advance_by(step);
}

}  // namespace

TEST_CASE("1 MB written at 100 KB/s takes 10 virtual seconds") {
  auto shaping = std::make_shared<ChannelTrafficShapingHandler>(k100KBps, 0);
  EmbeddedChannel ch;
  ch.freeze_time();
  ch.pipeline().add_last(shaping);
  const std::int64_t start = ch.event_loop().current_time_nanos();
  std::int64_t finished = -1;
  int completed = 0;
  for (int i = 0; i < 100; ++i) {
    ChannelPromise p = ch.new_promise();
    p.future().add_listener([&](const Future<void>& f) {
      CHECK(f.is_success());
      if (++completed == 100) finished = ch.event_loop().current_time_nanos();
    });
    ch.write(chunk(i), p);
  }
  ch.flush();
  CHECK(ch.outbound_messages().empty());  // even the first 10 KB costs 100 ms
  advance_until(
      ch, [&] { return completed == 100; }, 10ms, 20s);
  REQUIRE(completed == 100);
  const auto elapsed = std::chrono::nanoseconds(finished - start);
  CHECK(elapsed >= 10s - 1s);  // within one check interval (the default, 1 s)
  CHECK(elapsed <= 10s + 1s);
  CHECK(elapsed >= 9900ms);  // in fact exactly paced: the last chunk is paid for at 10 s
  CHECK(elapsed <= 10s);
  REQUIRE(ch.outbound_messages().size() == 100);
  for (int i = 0; i < 100; ++i) {
    auto buf = ch.read_outbound<ByteBuf>();
    CHECK(buf->readable_bytes() == 10'000);
    CHECK(buf->get_u8(buf->reader_index()) == 'A' + i % 26);
  }
  CHECK(shaping->shaper().cumulative_written_bytes() == 1'000'000);
  CHECK(shaping->queued_bytes() == 0);
}

TEST_CASE("delayed writes keep their order and promises, and nothing is dropped") {
  auto shaping = std::make_shared<ChannelTrafficShapingHandler>(k100KBps, 0);
  EmbeddedChannel ch;
  ch.freeze_time();
  ch.pipeline().add_last(shaping);
  ch.write_outbound(ByteBuf::from(std::string(100, 'a')));  // 1 ms of budget: goes at once
  CHECK(ch.outbound_messages().size() == 1);
  ChannelPromise big = ch.new_promise();
  ch.write(ByteBuf::from(std::string(50'000, 'b')), big);  // 500 ms
  shaping->shaper().configure(0, 0);  // no limit any more: "c" could go at once...
  ChannelPromise small = ch.new_promise();
  ch.write(std::string("c"), small);  // ...but waits behind "b"
  ch.flush();
  CHECK(ch.outbound_messages().size() == 1);
  CHECK(shaping->queued_writes() == 2);
  ch.advance_by(490ms);
  CHECK_FALSE(big.future().is_done());
  ch.advance_by(20ms);
  CHECK(big.future().is_success());
  CHECK(small.future().is_success());
  CHECK(ch.outbound_messages().size() == 3);
  ch.read_outbound<ByteBuf>();
  CHECK(ch.read_outbound<ByteBuf>()->readable_bytes() == 50'000);
  CHECK(ch.read_outbound<std::string>() == "c");
}

TEST_CASE("queued bytes over the bound make the channel unwritable instead of dropping") {
  auto shaping = std::make_shared<ChannelTrafficShapingHandler>(
      k100KBps, 0, TrafficShaper::kDefaultCheckInterval, /*max_queued_bytes=*/25'000);
  auto watcher = std::make_shared<WritabilityWatcher>();
  EmbeddedChannel ch;
  ch.freeze_time();
  ch.pipeline().add_last(shaping);
  ch.pipeline().add_last(watcher);
  for (int i = 0; i < 5; ++i) ch.write(chunk(i));
  ch.flush();
  CHECK(shaping->queued_bytes() == 50'000);
  CHECK_FALSE(ch.is_writable());
  CHECK(watcher->seen == std::vector<bool>{false});
  ch.advance_by(300ms);  // three released: 20,000 still queued, above half the bound
  CHECK(ch.outbound_messages().size() == 3);
  CHECK_FALSE(ch.is_writable());
  ch.advance_by(100ms);  // 10,000 left: writable again
  CHECK(ch.is_writable());
  CHECK(watcher->seen == std::vector<bool>{false, true});
  ch.advance_by(100ms);
  CHECK(ch.outbound_messages().size() == 5);
}

TEST_CASE("reads over the limit pause auto_read and resume it later") {
  auto shaping = std::make_shared<ChannelTrafficShapingHandler>(0, k100KBps);
  EmbeddedChannel ch;
  ch.freeze_time();
  ch.pipeline().add_last(shaping);
  ch.write_inbound(chunk(0), chunk(1), chunk(2), chunk(3));
  // the first 10 KB cost 100 ms: reading stops after it, the rest waits in the "socket"
  CHECK(ch.inbound_messages().size() == 1);
  CHECK(ch.pending_inbound_messages().size() == 3);
  CHECK_FALSE(ch.config().auto_read());
  CHECK(shaping->is_read_suspended());
  ch.advance_by(99ms);
  CHECK(ch.inbound_messages().size() == 1);
  ch.advance_by(1ms);  // resumed: one more, then paused again
  CHECK(ch.inbound_messages().size() == 2);
  ch.advance_by(100ms);
  ch.advance_by(100ms);
  CHECK(ch.inbound_messages().size() == 4);
  ch.advance_by(100ms);
  CHECK(ch.config().auto_read());
  CHECK_FALSE(shaping->is_read_suspended());
  for (int i = 0; i < 4; ++i) {
    auto buf = ch.read_inbound<ByteBuf>();
    CHECK(buf->get_u8(buf->reader_index()) == 'A' + i);
  }
}

TEST_CASE("with auto_read off, a read() during a pause is held back until it ends") {
  auto shaping = std::make_shared<ChannelTrafficShapingHandler>(0, k100KBps);
  EmbeddedChannel ch{EmbeddedChannel::Options{.auto_read = false}};
  ch.freeze_time();
  ch.pipeline().add_last(shaping);
  ch.write_inbound(chunk(0), chunk(1));
  ch.read();
  CHECK(ch.inbound_messages().size() == 2);  // a read() with auto_read off takes its whole batch
  CHECK(shaping->is_read_suspended());       // 20 KB: 200 ms
  ch.write_inbound(chunk(2));
  ch.read();  // held back
  CHECK(ch.inbound_messages().size() == 2);
  ch.advance_by(199ms);  // the pause covers both messages of the batch, not only the first
  CHECK(ch.inbound_messages().size() == 2);
  ch.advance_by(1ms);
  CHECK(ch.inbound_messages().size() == 3);
  CHECK_FALSE(ch.config().auto_read());  // the application's setting is left alone
}

TEST_CASE("removing the handler releases the delayed writes and resumes reading") {
  auto shaping = std::make_shared<ChannelTrafficShapingHandler>(k100KBps, k100KBps);
  EmbeddedChannel ch;
  ch.freeze_time();
  ch.pipeline().add_last(shaping);
  ch.write_outbound(chunk(0), chunk(1));
  ch.write_inbound(chunk(2), chunk(3));
  CHECK(ch.outbound_messages().empty());
  CHECK_FALSE(ch.config().auto_read());
  ch.pipeline().remove(*shaping);
  CHECK(ch.outbound_messages().size() == 2);
  CHECK(ch.config().auto_read());
  CHECK(ch.inbound_messages().size() == 2);
}

TEST_CASE("closing fails the delayed writes with ClosedChannelError") {
  auto shaping = std::make_shared<ChannelTrafficShapingHandler>(k100KBps, 0);
  EmbeddedChannel ch;
  ch.freeze_time();
  ch.pipeline().add_last(shaping);
  ChannelPromise p = ch.new_promise();
  ch.write(chunk(0), p);
  ch.flush();
  ch.close();
  REQUIRE(p.future().is_done());
  CHECK_THROWS_AS(p.future().get(), ClosedChannelError);
  ch.advance_by(1s);
  CHECK(ch.outbound_messages().empty());
}

TEST_CASE("a global limit is shared by two channels") {
  auto global = std::make_shared<GlobalTrafficShapingHandler>(k100KBps, 0);
  EmbeddedChannel a;
  EmbeddedChannel b;
  a.freeze_time();
  b.freeze_time();
  a.pipeline().add_last(global);
  b.pipeline().add_last(global);
  const std::int64_t start = a.event_loop().current_time_nanos();
  int completed = 0;
  std::int64_t finished = -1;
  for (int i = 0; i < 50; ++i) {
    for (EmbeddedChannel* ch : {&a, &b}) {
      ChannelPromise p = ch->new_promise();
      p.future().add_listener([&](const Future<void>&) {
        if (++completed == 100) finished = a.event_loop().current_time_nanos();
      });
      ch->write(chunk(i), p);
    }
  }
  a.flush();
  b.flush();
  CHECK(global->queued_bytes(a) == 500'000);
  CHECK(global->queued_bytes(b) == 500'000);
  for (auto t = 0ms; t < 20s && completed < 100; t += 10ms) {
    a.advance_by(10ms);
    b.advance_by(10ms);
  }
  REQUIRE(completed == 100);
  // 1 MB together at 100 KB/s: 10 s, where each channel alone would have taken 5 s
  const auto elapsed = std::chrono::nanoseconds(finished - start);
  CHECK(elapsed >= 9s);
  CHECK(elapsed <= 11s);
  CHECK(a.outbound_messages().size() == 50);
  CHECK(b.outbound_messages().size() == 50);
  CHECK(global->shaper().cumulative_written_bytes() == 1'000'000);
  a.pipeline().remove(*global);
  CHECK(global->queued_bytes(a) == 0);
}

TEST_CASE("TrafficShaper: small amounts go at once and the rate holds over time") {
  TrafficShaper shaper(1'000'000, 0);  // 1 MB/s
  std::int64_t now = 1'000'000'000;
  CHECK(shaper.write_wait(5'000, now) == 0);  // 5 ms of debt: under the minimal wait
  CHECK(shaper.write_wait(5'000, now) == 0);  // 10 ms
  CHECK(shaper.write_wait(5'000, now) == 15'000'000);
  CHECK(shaper.read_wait(1'000'000, now) == 0);  // reads unlimited
  now += 2'000'000'000;                          // idle time is not saved up
  CHECK(shaper.write_wait(20'000, now) == 20'000'000);
  CHECK(shaper.cumulative_written_bytes() == 35'000);
  CHECK(shaper.last_write_throughput(now + 1'000'000'000) == 20'000);
  CHECK_THROWS_AS(TrafficShaper(1, 1, 0ns), InvalidArgumentError);
}

TEST_CASE("TrafficShaper: accounting from several threads at once loses nothing") {
  TrafficShaper shaper(1'000'000'000, 1'000'000'000);
  auto work = [&shaper] {
    for (int i = 0; i < 10'000; ++i) {
      shaper.write_wait(10, i);
      shaper.read_wait(1, i);
    }
  };
  std::thread t1(work);
  std::thread t2(work);
  t1.join();
  t2.join();
  CHECK(shaper.cumulative_written_bytes() == 200'000);
  CHECK(shaper.cumulative_read_bytes() == 20'000);
}

// The first code block of the "Traffic shaping" section of docs/handlers.md (checked by
// docs.traffic_shaping_snippets).
namespace docs {

// One limit for the whole server: 10 MB/s out and 1 MB/s in, all connections together.
const auto server_limit = std::make_shared<GlobalTrafficShapingHandler>(
    /*write_limit=*/10'000'000, /*read_limit=*/1'000'000);

void init_shaped_channel(Channel& ch) {
  ch.pipeline().add_last(server_limit);
  // And at most 100 KB/s out for each connection.
  ch.pipeline().add_last(std::make_shared<ChannelTrafficShapingHandler>(100'000, 0));
  // ... decoders and the application's handlers
}

}  // namespace docs

TEST_CASE("docs/handlers.md: a global limit and a per-channel limit together") {
  EmbeddedChannel a;
  EmbeddedChannel b;
  a.freeze_time();
  b.freeze_time();
  docs::init_shaped_channel(a);
  docs::init_shaped_channel(b);
  a.write_outbound(chunk(0));  // 100 ms at 100 KB/s per channel
  b.write_outbound(chunk(1));
  CHECK(a.outbound_messages().empty());
  a.advance_by(100ms);
  b.advance_by(100ms);
  CHECK(a.outbound_messages().size() == 1);
  CHECK(b.outbound_messages().size() == 1);
  CHECK(docs::server_limit->shaper().cumulative_written_bytes() == 20'000);
}

TEST_CASE("delayed writes allocate nothing in steady state") {
  auto shaping = std::make_shared<ChannelTrafficShapingHandler>(1'000'000, 0);  // 1 MB/s
  EmbeddedChannel ch;
  ch.freeze_time();
  ch.pipeline().add_last(shaping);
  const ByteBuf data = ByteBuf::from(std::string(1000, 'd'));  // 1 ms each
  auto round = [&] {
    for (int i = 0; i < 20; ++i) ch.write(data.share());  // 20 ms: half of them wait
    ch.flush();
    ch.advance_by(20ms);
    while (!ch.outbound_messages().empty()) ch.outbound_messages().take_front();
  };
  for (int i = 0; i < 4; ++i) round();
  REQUIRE(shaping->queued_writes() == 0);
  const auto scheduled = ch.event_loop().schedule_calls();
  trellis::testing::AllocationScope scope;
  for (int i = 0; i < 100; ++i) round();
#if TRELLIS_NODE_CACHE_ENABLED
  CHECK(scope.count() == 0);
#else
  CHECK(scope.count() > 0);  // (the timer nodes' cache is off under ASan: one heap block each)
#endif
  CHECK(ch.event_loop().schedule_calls() > scheduled);  // the writes were delayed
}
