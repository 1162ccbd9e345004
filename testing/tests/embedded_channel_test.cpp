// Tests of EmbeddedChannel: the message queues, life cycle, exceptions, auto_read, virtual time.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <trellis/pipeline/awaitables.hpp>
#include <trellis/pipeline/channel_events.hpp>
#include <trellis/testing/doctest_helpers.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {

using Log = std::vector<std::string>;

class LifeCycle : public ChannelInboundHandler {
 public:
  explicit LifeCycle(Log* log) : log_(log) {}
  void channel_registered(ChannelHandlerContext& ctx) override {
    log_->push_back("registered");
    ctx.fire_channel_registered();
  }
  void channel_active(ChannelHandlerContext& ctx) override {
    log_->push_back("active");
    ctx.fire_channel_active();
  }
  void channel_inactive(ChannelHandlerContext& ctx) override {
    log_->push_back("inactive");
    ctx.fire_channel_inactive();
  }
  void channel_unregistered(ChannelHandlerContext& ctx) override {
    log_->push_back("unregistered");
    ctx.fire_channel_unregistered();
  }
  void handler_removed(ChannelHandlerContext&) override { log_->push_back("removed"); }

 private:
  Log* log_;
};

// Fires a "timeout" user event when no read arrived for kTimeout after activation.
class ReadTimeout : public ChannelInboundHandler {
 public:
  static constexpr auto kTimeout = 30s;
  void channel_active(ChannelHandlerContext& ctx) override {
    timer_ = ctx.executor().schedule(
        kTimeout, [&ctx] { ctx.fire_user_event_triggered(std::string("timeout")); });
    ctx.fire_channel_active();
  }
  ScheduledFuture<void> timer_;
};

// Consumes every read.
class Swallow : public ChannelInboundHandler {
 public:
  void channel_read(ChannelHandlerContext&, Message) override { ++reads; }
  int reads = 0;
};

}  // namespace

TEST_CASE("an embedded channel is registered and active once constructed") {
  Log log;
  EmbeddedChannel ch{std::make_shared<LifeCycle>(&log)};
  CHECK(ch.is_open());
  CHECK(ch.is_active());
  CHECK(ch.is_registered());
  CHECK(log == Log{"registered", "active"});
  CHECK(ch.pipeline().size() == 1);
  CHECK(&ch.event_loop() == &static_cast<Channel&>(ch).event_loop());
}

TEST_CASE("an embedded channel can be registered later") {
  Log log;
  EmbeddedChannel ch{EmbeddedChannel::Options{.register_channel = false},
                     std::make_shared<LifeCycle>(&log)};
  CHECK_FALSE(ch.is_active());
  CHECK(log.empty());
  ch.register_channel();
  CHECK(log == Log{"registered", "active"});
}

TEST_CASE("write_inbound reports whether something can be read, read_inbound takes it") {
  auto swallow = std::make_shared<Swallow>();
  EmbeddedChannel consumer{swallow};
  CHECK_FALSE(consumer.write_inbound(1, 2));
  CHECK(swallow->reads == 2);
  CHECK_FALSE(consumer.read_inbound());

  EmbeddedChannel ch;
  CHECK(ch.write_inbound(ByteBuf::from("abc"), 5));
  CHECK(ch.inbound_messages().size() == 2);
  TRELLIS_CHECK_INBOUND_STRING(ch, "abc");
  auto any = ch.read_inbound();  // as a Message
  REQUIRE(any);
  CHECK(any->get<int>() == 5);
  TRELLIS_CHECK_NO_MORE_INBOUND(ch);
  CHECK(ch.read_inbound<int>() == std::nullopt);
}

TEST_CASE("reading a message as the wrong type throws WrongTypeError naming both types") {
  EmbeddedChannel ch;
  ch.write_inbound(std::string("text"));
  try {
    (void)ch.read_inbound<ByteBuf>();
    FAIL("expected WrongTypeError");
  } catch (const WrongTypeError& e) {
    const std::string what = e.what();
    CHECK(what.find("ByteBuf") != std::string::npos);
    CHECK(what.find("basic_string") != std::string::npos);
  }
  CHECK(ch.read_inbound<std::string>() == "text");  // it stayed queued

  ch.write_outbound(1.5);
  CHECK_THROWS_AS((void)ch.read_outbound<int>(), WrongTypeError);
  CHECK(ch.read_outbound<double>() == 1.5);
}

TEST_CASE("write_outbound reports whether something can be read outbound") {
  EmbeddedChannel ch;
  CHECK(ch.write_outbound(ByteBuf::from("x"), ByteBuf::from("y")));
  TRELLIS_CHECK_OUTBOUND_STRING(ch, "x");
  TRELLIS_CHECK_OUTBOUND_STRING(ch, "y");
  TRELLIS_CHECK_NO_MORE_OUTBOUND(ch);
}

TEST_CASE("finish closes and reports leftover messages, which stay readable") {
  trellis::testing::BufferLeakCheck leaks;
  {
    Log log;
    EmbeddedChannel ch{std::make_shared<LifeCycle>(&log)};
    ch.write_inbound(ByteBuf::from("left"));
    CHECK(ch.finish());
    CHECK_FALSE(ch.is_open());
    CHECK(log == Log{"registered", "active", "inactive", "unregistered", "removed"});
    TRELLIS_CHECK_INBOUND_STRING(ch, "left");

    EmbeddedChannel empty;
    CHECK_FALSE(empty.finish());

    EmbeddedChannel dropped;
    dropped.write_outbound(ByteBuf::from("gone"));
    CHECK(dropped.finish_and_release_all());
    CHECK(dropped.outbound_messages().empty());
  }
  TRELLIS_CHECK_NO_LEAKED_BUFFERS(leaks);
}

TEST_CASE("close fires inactive then unregistered once and cancels scheduled tasks") {
  Log log;
  auto timeout = std::make_shared<ReadTimeout>();
  EmbeddedChannel ch{std::make_shared<LifeCycle>(&log), timeout};
  CHECK(ch.event_loop().scheduled_task_count() == 1);
  auto closed = ch.close_future();
  ch.close();
  CHECK(closed.is_success());
  CHECK(log == Log{"registered", "active", "inactive", "unregistered", "removed"});
  CHECK(timeout->timer_.is_cancelled());
  CHECK(ch.event_loop().scheduled_task_count() == 0);
  ch.close();  // a second close changes nothing
  CHECK(log.size() == 5);
}

TEST_CASE("a close after the loop shut down still fires inactive and unregistered, inline") {
  Log log;
  EmbeddedChannel ch{std::make_shared<LifeCycle>(&log)};
  REQUIRE(ch.event_loop().shutdown_gracefully().is_success());
  // The loop refuses tasks now: the close's follow-up events run on the caller's stack instead
  // of being dropped (a channel never deregistered would keep itself alive).
  ch.close();
  CHECK_FALSE(ch.is_open());
  CHECK_FALSE(ch.is_registered());
  CHECK(log == Log{"registered", "active", "inactive", "unregistered", "removed"});
}

TEST_CASE("a closing handler closes the channel through the pipeline") {
  class CloseOnRead : public ChannelInboundHandler {
    void channel_read(ChannelHandlerContext& ctx, Message) override { ctx.close(); }
  };
  EmbeddedChannel ch{std::make_shared<CloseOnRead>()};
  ch.write_inbound(1);
  CHECK_FALSE(ch.is_open());
  CHECK_FALSE(ch.is_registered());
  CHECK_THROWS_AS(ch.write_inbound(2), ClosedChannelError);
}

TEST_CASE("check_exception rethrows the first exception; exceptions() keeps them all") {
  class Thrower : public ChannelInboundHandler {
    void channel_read(ChannelHandlerContext&, Message msg) override {
      throw std::runtime_error("bad " + std::to_string(msg.get<int>()));
    }
  };
  EmbeddedChannel ch{std::make_shared<Thrower>()};
  ch.pipeline().fire_channel_read(1);
  ch.pipeline().fire_channel_read(2);
  CHECK(ch.exceptions().size() == 2);
  CHECK_THROWS_WITH(ch.check_exception(), "bad 1");
  CHECK_NOTHROW(ch.check_exception());
  CHECK(ch.exceptions().size() == 2);
  // A task that throws is recorded too.
  ch.event_loop().execute([]() -> void { throw std::logic_error("task"); });
  ch.run_pending_tasks();
  CHECK_THROWS_WITH(ch.check_exception(), "task");
  CHECK(ch.exceptions().size() == 3);
}

TEST_CASE("with auto_read off, written inbound messages wait until read()") {
  EmbeddedChannel ch{EmbeddedChannel::Options{.auto_read = false}};
  CHECK_FALSE(ch.write_inbound(1, 2, 3));
  CHECK(ch.pending_inbound_messages().size() == 3);
  ch.config().set_max_messages_per_read(2);
  ch.read();
  CHECK(ch.inbound_messages().size() == 2);  // one read delivers max_messages_per_read
  ch.read();
  CHECK(ch.inbound_messages().size() == 3);
  ch.read();  // nothing to read: the request waits for data
  CHECK(ch.write_inbound(4));
  CHECK(ch.inbound_messages().size() == 4);
  ch.write_inbound(5);  // no request pending any more
  CHECK(ch.inbound_messages().size() == 4);
  CHECK(ch.pending_inbound_messages().size() == 1);
  ch.config().set_auto_read(true);  // turning it on reads at once
  CHECK(ch.inbound_messages().size() == 5);
  CHECK(ch.write_inbound(6));
  CHECK(ch.inbound_messages().size() == 6);
}

namespace {
// Turns auto_read off once it has seen `limit` messages; records read_complete.
class PauseAfter final : public ChannelInboundHandler {
 public:
  explicit PauseAfter(int limit) : limit_(limit) {}
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    if (++seen == limit_) ctx.channel().config().set_auto_read(false);
    ctx.fire_channel_read(std::move(msg));
  }
  void channel_read_complete(ChannelHandlerContext& ctx) override {
    ++read_completes;
    ctx.fire_channel_read_complete();
  }
  int seen = 0;
  int read_completes = 0;

 private:
  int limit_;
};
}  // namespace

TEST_CASE("a read under auto_read stops at the message after which auto_read went off") {
  auto pause = std::make_shared<PauseAfter>(2);
  EmbeddedChannel ch{EmbeddedChannel::Options{.auto_read = false}, pause};
  ch.write_inbound(1, 2, 3, 4, 5);
  CHECK(ch.pending_inbound_messages().size() == 5);
  ch.config().set_auto_read(true);  // reads; the handler turns it off again after message 2
  CHECK(ch.inbound_messages().size() == 2);
  CHECK(ch.pending_inbound_messages().size() == 3);
  CHECK(pause->read_completes == 1);  // the stopped read still ends with read_complete
  ch.read();                          // a read() made with auto_read off delivers its whole batch
  CHECK(ch.inbound_messages().size() == 5);
}

TEST_CASE("turning auto_read off drops the read that waits for data") {
  EmbeddedChannel ch;  // active with auto_read on: a read waits for data
  ch.config().set_auto_read(false);
  ch.write_inbound(1);
  CHECK(ch.inbound_messages().empty());
  CHECK(ch.pending_inbound_messages().size() == 1);
  ch.read();
  CHECK(ch.read_inbound<int>() == 1);
}

TEST_CASE("advance_by fires a timeout exactly at its deadline and not 1 ns before") {
  auto timeout = std::make_shared<ReadTimeout>();
  EmbeddedChannel ch;
  ch.freeze_time();
  ch.pipeline().add_last(timeout);
  ch.pipeline().fire_channel_active();
  ch.advance_by(ReadTimeout::kTimeout - 1ns);
  CHECK(ch.user_events().empty());
  ch.advance_by(1ns);
  REQUIRE(ch.user_events().size() == 1);
  CHECK(ch.user_events().front().get<std::string>() == "timeout");
}

TEST_CASE("frozen time stays frozen across run_pending_tasks") {
  EmbeddedChannel ch;
  ch.freeze_time();
  const auto t0 = ch.event_loop().current_time_nanos();
  bool ran = false;
  ch.event_loop().schedule(1ns, [&] { ran = true; });
  for (int i = 0; i < 100; ++i) {
    ch.event_loop().execute([] {});
    ch.run_pending_tasks();
  }
  std::this_thread::sleep_for(2ms);
  ch.run_pending_tasks();
  CHECK(ch.event_loop().current_time_nanos() == t0);
  CHECK_FALSE(ran);
  CHECK(ch.run_scheduled_pending_tasks() == t0 + 1);
  ch.advance_by(1ns);
  CHECK(ran);
  CHECK(ch.run_scheduled_pending_tasks() == -1);
  ch.unfreeze_time();
  CHECK(ch.event_loop().current_time_nanos() >= t0 + 1);
}

TEST_CASE("coroutines on the channel's loop sleep in virtual time") {
  EmbeddedChannel ch;
  ch.freeze_time();
  bool woke = false;
  auto body = [&]() -> Task<int> {
    co_await sleep_for(1s);
    woke = true;
    co_return 7;
  };
  auto f = ch.event_loop().spawn(body());
  ch.run_pending_tasks();
  CHECK_FALSE(woke);
  ch.advance_by(999ms);
  CHECK_FALSE(woke);
  ch.advance_by(1ms);
  CHECK(woke);
  CHECK(f.get() == 7);
}

TEST_CASE(
    "a task sleeping on the channel's loop wakes with CancelledError when the channel closes") {
  EmbeddedChannel ch;
  bool after_sleep = false;
  auto body = [&]() -> Task<void> {
    co_await sleep_for(1h);
    after_sleep = true;
  };
  auto f = ch.event_loop().spawn(body());
  ch.run_pending_tasks();
  REQUIRE_FALSE(f.is_done());
  ch.close();
  ch.run_pending_tasks();
  REQUIRE(f.is_done());
  CHECK_FALSE(after_sleep);
  CHECK_THROWS_AS(f.get(), CancelledError);
  CHECK(ch.event_loop().scheduled_task_count() == 0);
}

TEST_CASE("user events that reach the tail are kept") {
  EmbeddedChannel ch;
  ch.pipeline().fire_user_event_triggered(ChannelInputShutdownEvent{});
  REQUIRE(ch.user_events().size() == 1);
  CHECK(ch.user_events().front().is<ChannelInputShutdownEvent>());
}

TEST_CASE("bind and connect complete and set the addresses") {
  EmbeddedChannel ch;
  auto p = ch.new_promise();
  ch.connect(SocketAddress::from_ip("10.0.0.1", 80), p);
  CHECK(p.is_success());
  CHECK(ch.remote_address()->to_string() == "10.0.0.1:80");
  auto b = ch.new_promise();
  ch.bind(SocketAddress::from_ip("0.0.0.0", 81), b);
  CHECK(b.is_success());
  CHECK(ch.local_address()->port() == 81);
  auto d = ch.new_promise();
  ch.disconnect(d);  // no disconnect on an embedded channel: it closes
  CHECK(d.is_success());
  CHECK_FALSE(ch.is_open());
}

TEST_CASE("shutdown_output fails queued and later writes and fires the event; input stays open") {
  EmbeddedChannel ch;
  ch.set_writable(false);  // the peer does not read: a flushed write stays queued
  auto queued = ch.new_promise();
  ch.write_and_flush(Message(std::string("queued")), queued);
  CHECK_FALSE(queued.is_done());
  auto done = ch.shutdown_output();
  REQUIRE(done.is_done());
  CHECK(done.is_success());
  CHECK(ch.is_output_shutdown());
  CHECK((queued.is_done() && queued.cause() != nullptr));
  auto later = ch.new_promise();
  ch.write_and_flush(Message(std::string("later")), later);
  CHECK((later.is_done() && later.cause() != nullptr));
  REQUIRE(ch.user_events().size() == 1);
  CHECK(ch.user_events().front().is<ChannelOutputShutdownEvent>());
  CHECK(ch.is_active());
  CHECK(ch.write_inbound(std::string("still read")));
  CHECK(ch.read_inbound<std::string>() == "still read");
}

TEST_CASE("shutdown_input closes without half-closure and fires the input events with it") {
  SUBCASE("without half-closure") {
    EmbeddedChannel ch;
    ch.shutdown_input();
    CHECK_FALSE(ch.is_open());
  }
  SUBCASE("with half-closure, then the output too") {
    EmbeddedChannel ch;
    ch.set_allow_half_closure(true);
    ch.shutdown_input();
    CHECK(ch.is_active());
    CHECK(ch.is_input_shutdown());
    REQUIRE(ch.user_events().size() == 2);
    CHECK(ch.user_events().front().is<ChannelInputShutdownEvent>());
    CHECK_THROWS_AS(ch.write_inbound(1), ClosedChannelError);
    ch.shutdown_output();
    CHECK_FALSE(ch.is_open());  // both halves shut: closed, as a socket
  }
}

TEST_CASE("shutdown_input without half-closure closes once the flushed writes are taken") {
  EmbeddedChannel ch;
  ch.set_writable(false);  // the peer does not read
  auto first = ch.new_promise();
  ch.write_and_flush(Message(std::string("first")), first);
  ch.shutdown_input();
  // The drain: no more input, no half-closure event, the output still open.
  CHECK(ch.is_active());
  CHECK(ch.is_input_shutdown());
  CHECK(ch.user_events().empty());
  CHECK_THROWS_AS(ch.write_inbound(1), ClosedChannelError);
  auto second = ch.new_promise();
  ch.write_and_flush(Message(std::string("second")), second);  // flushed during the drain
  auto never = ch.new_promise();
  ch.write(Message(std::string("never")), never);  // not flushed
  ch.set_writable(true);
  CHECK_FALSE(ch.is_open());
  CHECK(first.is_success());
  CHECK(second.is_success());
  REQUIRE(never.is_done());
  CHECK_THROWS_AS(std::rethrow_exception(never.cause()), ClosedChannelError);
  CHECK(ch.read_outbound<std::string>() == "first");
  CHECK(ch.read_outbound<std::string>() == "second");
  CHECK_FALSE(ch.read_outbound().has_value());
}

TEST_CASE("the drain after shutdown_input ends at eof_drain_timeout on the channel's clock") {
  EmbeddedChannel ch;
  ch.freeze_time();
  ch.config().set_eof_drain_timeout(200ms);
  ch.set_writable(false);
  auto queued = ch.new_promise();
  ch.write_and_flush(Message(std::string("queued")), queued);
  ch.advance_by(1s);  // time before the end of input does not count
  ch.shutdown_input();
  ch.advance_by(199ms);
  ch.run_pending_tasks();
  CHECK(ch.is_active());
  CHECK_FALSE(queued.is_done());
  ch.advance_by(1ms);
  ch.run_pending_tasks();
  CHECK_FALSE(ch.is_open());
  REQUIRE(queued.is_done());
  CHECK_THROWS_AS(std::rethrow_exception(queued.cause()), ClosedChannelError);
}

TEST_CASE("shutdown_input without half-closure closes at once when eof_drain_timeout is 0") {
  EmbeddedChannel ch;
  ch.config().set_eof_drain_timeout(0ms);
  ch.set_writable(false);
  auto queued = ch.new_promise();
  ch.write_and_flush(Message(std::string("queued")), queued);
  ch.shutdown_input();
  CHECK_FALSE(ch.is_open());
  REQUIRE(queued.is_done());
  CHECK_THROWS_AS(std::rethrow_exception(queued.cause()), ClosedChannelError);
}

TEST_CASE("a channel that cannot half-close fails shutdown_output with IllegalStateError") {
  // The base class's answer, seen through a Channel reference to a transport that keeps it.
  class NoHalfClose final : public Channel {
   public:
    explicit NoHalfClose(EventExecutor& loop) : Channel(loop) {}
    bool is_open() const override { return true; }
    bool is_active() const override { return true; }
    std::optional<SocketAddress> local_address() const override { return std::nullopt; }
    std::optional<SocketAddress> remote_address() const override { return std::nullopt; }

   protected:
    void do_bind(const SocketAddress&) override {}
    void do_connect(const SocketAddress&, const std::optional<SocketAddress>&,
                    ChannelPromise) override {}
    void do_close() override {}
    void do_begin_read() override {}
    void do_write(ChannelOutboundBuffer&) override {}
  };
  EmbeddedEventLoop loop;
  NoHalfClose ch(loop);
  auto f = ch.shutdown_output();
  REQUIRE(f.is_done());
  CHECK_THROWS_AS(f.get(), IllegalStateError);
  CHECK_FALSE(ch.is_output_shutdown());
}
