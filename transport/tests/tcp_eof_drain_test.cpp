// A peer's FIN without half-closure: what was flushed is still written before the channel
// closes (a slow reader gets the whole echo), within eof_drain_timeout of the EOF on the loop's
// clock; nothing queued closes at once, a peer that closed fully ends the drain with the write
// error, and half-closure is unchanged.
#include <doctest/doctest.h>

#include <atomic>
#include <functional>
#include <thread>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

// Small socket buffers on both sides, so that most of a megabyte stays in the outbound buffer
// (a send buffer set by SO_SNDBUF no longer grows by itself).
constexpr int kSmallBuffer = 4096;
constexpr std::size_t kMiB = 1 << 20;

// A server on 127.0.0.1 whose children get `handler` (and what `configure` sets); hands out
// the first accepted child.
struct ChildServer {
  ChildServer(EventLoopGroup& group, std::shared_ptr<ChannelHandler> handler,
              const std::function<void(ServerBootstrap&)>& configure,
              std::function<void(Channel&)> init = {}) {
    ServerBootstrap b;
    b.group(group).child_handler(
        ChannelInitializer::from([handler, init, child = child_](Channel& ch) mutable {
          ch.pipeline().add_last(handler);
          if (init) init(ch);
          child.try_set_value(static_cast<SocketChannel&>(ch).shared_from_this());
        }));
    configure(b);
    auto f = b.bind("127.0.0.1", 0);
    REQUIRE(f.wait_for(kWait));
    REQUIRE(f.is_success());
    channel = f.get();
    port = channel->local_address()->port();
  }
  ~ChildServer() {
    channel->close();
    channel->close_future().wait_for(kWait);
  }
  std::shared_ptr<SocketChannel> child() {
    auto f = child_.future();
    REQUIRE(f.wait_for(kWait));
    return f.get();
  }
  std::shared_ptr<Channel> channel;
  std::uint16_t port = 0;

 private:
  Promise<std::shared_ptr<SocketChannel>> child_;
};

// Reads until EOF (eof = true) or an error or timeout (eof = false).
std::string read_all(RawClient& client, bool& eof) {
  std::string out;
  char chunk[16 * 1024];
  for (;;) {
    const ssize_t r = ::recv(client.fd(), chunk, sizeof chunk, 0);
    if (r <= 0) {
      eof = r == 0;
      return out;
    }
    out.append(chunk, static_cast<std::size_t>(r));
  }
}

// On the first read: one megabyte written and flushed (`big`). Then, once the channel has seen
// the peer's FIN (is_input_shutdown), a flushed "tail" and an unflushed "never" are written.
class AnswerDuringDrain final : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
  void channel_read(ChannelHandlerContext& ctx, Message) override {
    if (started_) return;
    started_ = true;
    big = ctx.new_promise();
    ctx.write_and_flush(Message(to_buf(random_bytes(kMiB, 11))), big);
    // The channel, not ctx: the context goes when the closed channel's pipeline is cleared.
    wait_for_eof(static_cast<SocketChannel&>(ctx.channel()).shared_from_this());
  }
  void exception_caught(ChannelHandlerContext&, std::exception_ptr) override {}
  void channel_inactive(ChannelHandlerContext& ctx) override {
    inactive.try_set_value();
    ctx.fire_channel_inactive();
  }
  ChannelPromise big;
  ChannelPromise tail;
  ChannelPromise never;
  Promise<bool> answered;  // true: the tail was written while the channel was still active
  Promise<void> inactive;

 private:
  void wait_for_eof(std::shared_ptr<SocketChannel> ch) {
    if (!ch->is_active()) {
      answered.try_set_value(false);
      return;
    }
    if (!ch->is_input_shutdown()) {
      ch->event_loop().schedule(1ms, [this, ch] { wait_for_eof(ch); });
      return;
    }
    tail = ch->new_promise();
    ch->write_and_flush(Message(to_buf("tail")), tail);
    never = ch->new_promise();
    ch->write(Message(to_buf("never")), never);
    answered.try_set_value(true);
  }
  bool started_ = false;
};

// On channel_active: one megabyte written and flushed (`big`); records the loop's clock at
// channel_inactive.
class Blast final : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
  void channel_active(ChannelHandlerContext& ctx) override {
    big = ctx.new_promise();
    ctx.write_and_flush(Message(to_buf(random_bytes(kMiB, 13))), big);
    active.try_set_value();
    ctx.fire_channel_active();
  }
  void channel_inactive(ChannelHandlerContext& ctx) override {
    inactive_at = ctx.executor().current_time_nanos();
    inactive.try_set_value();
    ctx.fire_channel_inactive();
  }
  void exception_caught(ChannelHandlerContext&, std::exception_ptr) override {}
  ChannelPromise big;
  Promise<void> active;
  Promise<void> inactive;
  std::atomic<std::int64_t> inactive_at{0};
};

bool failed_with_closed_channel(const ChannelPromise& p) {
  if (!p.is_done() || p.is_success()) return false;
  try {
    std::rethrow_exception(p.cause());
  } catch (const ClosedChannelError&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

TEST_CASE("without half-closure a peer's FIN lets the flushed echo drain before the close") {
  EventLoopGroup group(1);
  ChildServer server(group, std::make_shared<EchoHandler>(), [](ServerBootstrap& b) {
    b.child_option(channel_option::so_sndbuf, kSmallBuffer);
  });
  const std::string payload = random_bytes(kMiB, 7);
  RawClient client(server.port, AF_INET, kSmallBuffer);
  // The server reads it all (the echo handler never stops reading) while the echo backs up.
  REQUIRE(client.send_all(payload));
  client.shutdown_write();
  bool eof = false;
  const std::string got = read_all(client, eof);
  CHECK(eof);
  CHECK(got.size() == payload.size());
  const bool same = got == payload;
  CHECK(same);
  REQUIRE(server.child()->close_future().wait_for(kWait));
}

TEST_CASE("writes flushed during the drain after a peer's FIN are sent; unflushed ones fail") {
  EventLoopGroup group(1);
  auto handler = std::make_shared<AnswerDuringDrain>();
  ChildServer server(group, handler, [](ServerBootstrap& b) {
    b.child_option(channel_option::so_sndbuf, kSmallBuffer);
  });
  RawClient client(server.port, AF_INET, kSmallBuffer);
  REQUIRE(client.send_all("go"));
  client.shutdown_write();
  // Nothing is read before the tail is queued: the megabyte cannot have drained by then.
  auto answered = handler->answered.future();
  REQUIRE(answered.wait_for(kWait));
  CHECK(answered.get());
  bool eof = false;
  const std::string got = read_all(client, eof);
  CHECK(eof);
  REQUIRE(got.size() == kMiB + 4);
  const bool same = got == random_bytes(kMiB, 11) + "tail";
  CHECK(same);
  REQUIRE(handler->inactive.future().wait_for(kWait));
  CHECK(handler->big.is_success());
  CHECK(handler->tail.is_success());
  REQUIRE(handler->never.future().wait_for(kWait));
  CHECK(failed_with_closed_channel(handler->never));
}

TEST_CASE(
    "the drain after a peer's FIN ends at eof_drain_timeout, measured from the EOF, in "
    "virtual time") {
  constexpr auto kTimeout = 200ms;
  auto clock = std::make_shared<ManualClock>(std::chrono::seconds(1));
  EventLoopGroup group(1, {.clock = clock});
  auto handler = std::make_shared<Blast>();
  ChildServer server(group, handler, [&](ServerBootstrap& b) {
    b.child_option(channel_option::so_sndbuf, kSmallBuffer)
        .child_option(channel_option::eof_drain_timeout, kTimeout);
  });
  // Never reads: the megabyte cannot drain.
  RawClient client(server.port, AF_INET, kSmallBuffer);
  REQUIRE(handler->active.future().wait_for(kWait));
  auto child = server.child();
  client.shutdown_write();
  // The FIN reaches the loop in real time (a guard, not a timing); the clock stands still.
  for (int i = 0; i < 1000 && !child->eof_drain_deadline_nanos().has_value(); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  const auto deadline = child->eof_drain_deadline_nanos();
  REQUIRE(deadline.has_value());
  CHECK(*deadline == (clock->now() + kTimeout).count());
  clock->advance_by(kTimeout - 1ns);
  settle(group[0]);
  CHECK_FALSE(handler->inactive.future().is_done());
  CHECK(child->is_active());
  clock->advance_by(1ns);
  REQUIRE(handler->inactive.future().wait_for(kWait));
  CHECK(handler->inactive_at.load() == *deadline);
  CHECK(child->is_input_shutdown());
  REQUIRE(handler->big.future().wait_for(kWait));
  CHECK(failed_with_closed_channel(handler->big));
}

TEST_CASE("a peer's FIN with nothing flushed left to write closes at once") {
  EventLoopGroup group(1);
  ChildServer server(group, std::make_shared<EchoHandler>(), [](ServerBootstrap& b) {
    // A drain would outlast the test's waits.
    b.child_option(channel_option::eof_drain_timeout, std::chrono::milliseconds(3'600'000));
  });
  RawClient client(server.port);
  REQUIRE(client.send_all("x"));
  REQUIRE(client.recv_exact(1) == "x");  // the echo left the outbound buffer
  client.shutdown_write();
  bool eof = false;
  CHECK(read_all(client, eof).empty());
  CHECK(eof);
  auto child = server.child();
  REQUIRE(child->close_future().wait_for(kWait));
  CHECK_FALSE(child->eof_drain_deadline_nanos().has_value());
}

TEST_CASE("eof_drain_timeout 0 closes at a peer's FIN and drops what was not written") {
  EventLoopGroup group(1);
  ChildServer server(group, std::make_shared<EchoHandler>(), [](ServerBootstrap& b) {
    b.child_option(channel_option::so_sndbuf, kSmallBuffer)
        .child_option(channel_option::eof_drain_timeout, std::chrono::milliseconds(0));
  });
  RawClient client(server.port, AF_INET, kSmallBuffer);
  REQUIRE(client.send_all(random_bytes(kMiB, 7)));
  client.shutdown_write();
  bool eof = false;
  const std::string got = read_all(client, eof);
  // Only what the socket buffers held at the FIN arrives (a reset may cut even that short).
  CHECK(got.size() < kMiB);
  auto child = server.child();
  REQUIRE(child->close_future().wait_for(kWait));
  CHECK_FALSE(child->eof_drain_deadline_nanos().has_value());
}

TEST_CASE("a peer that closed fully ends the drain with the write error, not the deadline") {
  // Without auto_close the close still comes: the FIN decided it.
  bool auto_close = true;
  SUBCASE("auto_close") {}
  SUBCASE("no auto_close") { auto_close = false; }
  EventLoopGroup group(1);
  auto handler = std::make_shared<AnswerDuringDrain>();
  ChildServer server(
      group, handler,
      [](ServerBootstrap& b) {
        b.child_option(channel_option::so_sndbuf, kSmallBuffer)
            .child_option(channel_option::eof_drain_timeout, std::chrono::milliseconds(3'600'000));
      },
      [auto_close](Channel& ch) { ch.config().set_auto_close(auto_close); });
  {
    RawClient client(server.port, AF_INET, kSmallBuffer);
    REQUIRE(client.send_all("go"));
  }  // closed: a FIN, and a reset for what arrives after it (or a reset at once)
  REQUIRE(handler->inactive.future().wait_for(kWait));
  REQUIRE(handler->big.future().wait_for(kWait));
  CHECK_FALSE(handler->big.is_success());
}

TEST_CASE("with half-closure a peer's FIN starts no drain and no deadline") {
  EventLoopGroup group(1);
  struct WriteOnInputShutdown final : ChannelInboundHandler {
    bool is_sharable() const noexcept override { return true; }
    void user_event_triggered(ChannelHandlerContext& ctx, Message event) override {
      if (!event.is<ChannelInputShutdownEvent>()) return;
      big = ctx.new_promise();
      ctx.write_and_flush(Message(to_buf(random_bytes(kMiB, 17))), big);
      // Due after a drain deadline would have been: the loop runs scheduled tasks in deadline
      // order, so a drain's close would already have happened.
      auto ch = static_cast<SocketChannel&>(ctx.channel()).shared_from_this();
      ctx.executor().schedule(150ms, [this, ch] {
        still_open.try_set_value(ch->is_active() && !big.is_done() &&
                                 !ch->eof_drain_deadline_nanos().has_value());
        ch->close();
      });
    }
    void exception_caught(ChannelHandlerContext&, std::exception_ptr) override {}
    ChannelPromise big;
    Promise<bool> still_open;
  };
  auto handler = std::make_shared<WriteOnInputShutdown>();
  ChildServer server(group, handler, [](ServerBootstrap& b) {
    b.child_option(channel_option::allow_half_closure, true)
        .child_option(channel_option::so_sndbuf, kSmallBuffer)
        .child_option(channel_option::eof_drain_timeout, std::chrono::milliseconds(50));
  });
  RawClient client(server.port, AF_INET, kSmallBuffer);
  client.shutdown_write();
  auto still_open = handler->still_open.future();
  REQUIRE(still_open.wait_for(kWait));
  CHECK(still_open.get());
  REQUIRE(server.child()->close_future().wait_for(kWait));
  REQUIRE(handler->big.future().wait_for(kWait));  // fails right after the close future completes
  CHECK(failed_with_closed_channel(handler->big));
}
