// The examples of docs/coroutines.md, compiled and run as they appear there.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include <trellis/pipeline.hpp>
#include <trellis/testing.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace std::chrono_literals;

namespace {

// --- docs/coroutines.md: "AsyncChannel" -----------------------------------------------------
trellis::Task<void> echo(trellis::Channel& channel) {
  auto ac = trellis::AsyncChannel<std::string, std::string>::wrap(channel);
  auto body = [](auto& inbound, auto& outbound) -> trellis::Task<void> {
    while (auto line = co_await inbound.next()) {
      co_await outbound.write("echo: " + *line);
    }
  };
  co_await ac.execute_then_close(body);
}

// --- docs/coroutines.md: "Back-pressure" ----------------------------------------------------
trellis::Task<std::size_t> count_bytes(trellis::Channel& channel) {
  auto ac = trellis::AsyncChannel<trellis::ByteBuf, trellis::ByteBuf>::wrap(
      channel, {.low_watermark = 4, .high_watermark = 64});
  std::size_t total = 0;
  while (auto buf = co_await ac.inbound().next()) total += buf->readable_bytes();
  co_return total;
}

// --- docs/coroutines.md: "When a write goes on" --------------------------------------------
// Sends count shares of one buffer (no copy); each write goes on once queued.
trellis::Task<void> send_copies(trellis::Channel& channel, trellis::ByteBuf payload, int count) {
  auto ac = trellis::AsyncChannel<trellis::ByteBuf, trellis::ByteBuf>::wrap(
      channel, {.write_completion = trellis::AsyncWriteCompletion::queued});
  for (int i = 0; i < count; ++i) co_await ac.outbound().write(payload.share());
  co_await ac.close();
}

// --- docs/coroutines.md: "Coroutines inside handlers" ---------------------------------------
class DelayedReply final : public trellis::ChannelInboundHandler {
 public:
  void channel_read(trellis::ChannelHandlerContext& ctx, trellis::Message msg) override {
    ctx.spawn(reply_later(ctx, msg.take<std::string>()));
  }

 private:
  static trellis::Task<void> reply_later(trellis::ChannelHandlerContext& ctx, std::string text) {
    co_await trellis::sleep_for(1s);
    co_await ctx.write_and_flush_async(text + "!");
  }
};

}  // namespace

TEST_CASE("docs: an echo over AsyncChannel answers each line and closes at the end") {
  // --- docs/coroutines.md: "Testing" --------------------------------------------------------
  trellis::EmbeddedChannel ch;
  auto done = ch.event_loop().spawn(echo(ch));
  ch.run_pending_tasks();  // the task starts and wraps the channel
  ch.write_inbound(std::string("hi"));
  CHECK(ch.read_outbound<std::string>() == "echo: hi");
  ch.close();  // next() yields nullopt, the body returns, execute_then_close closes
  CHECK(done.is_success());
}

TEST_CASE("docs: a byte counter over AsyncChannel sums what it read") {
  trellis::EmbeddedChannel ch;
  auto total = ch.event_loop().spawn(count_bytes(ch));
  ch.run_pending_tasks();
  ch.write_inbound(trellis::ByteBuf::from("abc"), trellis::ByteBuf::from("de"));
  ch.close();
  REQUIRE(total.is_done());
  CHECK(total.get() == 5);
}

TEST_CASE("docs: queued writes send shares of one buffer") {
  trellis::EmbeddedChannel ch;
  auto done = ch.event_loop().spawn(send_copies(ch, trellis::ByteBuf::from("abc"), 3));
  ch.run_pending_tasks();
  REQUIRE(done.is_done());
  CHECK(done.is_success());
  CHECK(ch.outbound_messages().size() == 3);
  for (int i = 0; i < 3; ++i) {
    auto buf = ch.read_outbound<trellis::ByteBuf>();
    REQUIRE(buf);
    CHECK(buf->readable_bytes() == 3);
  }
}

TEST_CASE("docs: a handler's task answers a second later, or never if the channel closed") {
  trellis::EmbeddedChannel ch{std::make_shared<DelayedReply>()};
  ch.freeze_time();
  ch.write_inbound(std::string("hi"));
  ch.advance_by(1s);
  CHECK(ch.read_outbound<std::string>() == "hi!");

  ch.write_inbound(std::string("bye"));
  ch.close();  // the sleeping task is cancelled
  ch.advance_by(1s);
  CHECK(ch.outbound_messages().empty());
}
