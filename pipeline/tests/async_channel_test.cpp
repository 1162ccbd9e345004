// AsyncChannel: the inbound stream, awaited writes, half-close, close, execute_then_close,
// back-pressure and allocation budgets, on an EmbeddedChannel driven by the test.
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

using IntChannel = AsyncChannel<int, int>;

Task<void> collect(IntChannel& ac, std::vector<int>& out, bool& ended) {
  while (auto v = co_await ac.inbound().next()) out.push_back(*v);
  ended = true;
}

Task<void> next_into(IntChannel& ac, std::optional<int>& out) {
  out = co_await ac.inbound().next();
}

Task<void> write_one(IntChannel& ac, int v) { co_await ac.outbound().write(v); }

// Fails every write it sees with an IoError.
class FailingWrites final : public ChannelOutboundHandler {
 public:
  void write(ChannelHandlerContext&, Message, ChannelPromise promise) override {
    promise.try_set_exception(IoError(std::make_error_code(std::errc::broken_pipe), "write"));
  }
};

// Counts the flushes that pass through it.
class FlushCounter final : public ChannelOutboundHandler {
 public:
  void flush(ChannelHandlerContext& ctx) override {
    ++flushes;
    ctx.flush();
  }
  int flushes = 0;
};

// A channel owned by a shared_ptr that has no transport; for lifetime and loop checks.
class SharedTestChannel final : public Channel,
                                public std::enable_shared_from_this<SharedTestChannel> {
 public:
  explicit SharedTestChannel(EventExecutor& loop) : Channel(loop) {}
  bool is_open() const override { return open_; }
  bool is_active() const override { return false; }
  std::optional<SocketAddress> local_address() const override { return std::nullopt; }
  std::optional<SocketAddress> remote_address() const override { return std::nullopt; }
  std::shared_ptr<Channel> shared_owner() noexcept override { return weak_from_this().lock(); }

 protected:
  void do_bind(const SocketAddress&) override {}
  void do_connect(const SocketAddress&, const std::optional<SocketAddress>&,
                  ChannelPromise promise) override {
    promise.try_set_value();
  }
  void do_close() override { open_ = false; }
  void do_begin_read() override {}
  void do_write(ChannelOutboundBuffer&) override {}

 private:
  bool open_ = true;
};

}  // namespace

TEST_CASE("next() yields the messages that reach the tail, in order") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  std::vector<int> got;
  bool ended = false;
  auto done = ch.event_loop().spawn(collect(ac, got, ended));
  ch.run_pending_tasks();
  ch.write_inbound(1, 2, 3);
  CHECK(got == std::vector<int>{1, 2, 3});
  CHECK_FALSE(ended);
  CHECK(ac.inbound().buffered() == 0);
  CHECK(ch.inbound_messages().empty());  // consumed by the AsyncChannel, not the tail
  ch.close();
  CHECK(done.is_success());
}

TEST_CASE("next() yields nullopt once the channel is inactive") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  ch.write_inbound(7);  // buffered before anyone awaits
  std::vector<int> got;
  bool ended = false;
  auto done = ch.event_loop().spawn(collect(ac, got, ended));
  ch.run_pending_tasks();
  CHECK(got == std::vector<int>{7});
  CHECK_FALSE(ended);
  ch.close();
  CHECK(ended);
  CHECK(done.is_success());
}

TEST_CASE("next() yields nullopt when the input is shut down under half-closure") {
  EmbeddedChannel ch;
  ch.set_allow_half_closure(true);
  auto ac = IntChannel::wrap(ch);
  std::vector<int> got;
  bool ended = false;
  auto done = ch.event_loop().spawn(collect(ac, got, ended));
  ch.run_pending_tasks();
  ch.write_inbound(1);
  ch.shutdown_input();
  CHECK(ended);
  CHECK(got == std::vector<int>{1});
  CHECK(ch.is_active());  // the output stays usable
  REQUIRE_FALSE(ch.user_events().empty());
  CHECK(ch.user_events().front().is<ChannelInputShutdownEvent>());  // passed on to the tail
  CHECK(done.is_success());
}

TEST_CASE("next() rethrows an exception that reached the tail, in order with the messages") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  ch.write_inbound(1);
  ch.pipeline().fire_exception_caught(std::make_exception_ptr(Error("boom")));
  ch.write_inbound(2);
  CHECK(ac.inbound().buffered() == 3);
  auto body = [](IntChannel& a, std::vector<std::string>& log) -> Task<void> {
    for (int i = 0; i < 3; ++i) {
      try {
        auto v = co_await a.inbound().next();
        log.push_back(std::to_string(*v));
      } catch (const Error& e) {
        log.push_back(e.what());
      }
    }
  };
  std::vector<std::string> log;
  auto done = ch.event_loop().spawn(body(ac, log));
  ch.run_pending_tasks();
  CHECK(log == std::vector<std::string>{"1", "boom", "2"});
  CHECK(done.is_success());
  CHECK_NOTHROW(ch.check_exception());  // the AsyncChannel took it; the tail never saw it
}

TEST_CASE("next() of a message of another type throws WrongTypeError naming both types") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  std::optional<int> got;
  auto f = ch.event_loop().spawn(next_into(ac, got));
  ch.run_pending_tasks();
  ch.write_inbound(std::string("text"));
  REQUIRE(f.is_done());
  CHECK_THROWS_AS(f.get(), WrongTypeError);
  const std::string what = [&] {
    try {
      f.get();
    } catch (const WrongTypeError& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  CHECK(what.find(Message::name_of<int>()) != std::string::npos);
  CHECK(what.find(Message::name_of<std::string>()) != std::string::npos);
  // The stream goes on after the wrong message.
  auto g = ch.event_loop().spawn(next_into(ac, got));
  ch.write_inbound(5);
  CHECK(g.is_success());
  CHECK(got == 5);
}

TEST_CASE("AsyncChannel<Message, Message> passes any message through") {
  EmbeddedChannel ch;
  auto ac = AsyncChannel<Message, Message>::wrap(ch);
  auto echo = [](AsyncChannel<Message, Message>& a) -> Task<void> {
    while (auto m = co_await a.inbound().next()) co_await a.outbound().write(std::move(*m));
  };
  auto done = ch.event_loop().spawn(echo(ac));
  ch.write_inbound(std::string("a"), 2);
  CHECK(ch.read_outbound<std::string>() == "a");
  CHECK(ch.read_outbound<int>() == 2);
  ch.close();
  CHECK(done.is_success());
}

TEST_CASE("write() writes and flushes, and completes when the write completed") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  auto f = ch.event_loop().spawn(write_one(ac, 42));
  ch.run_pending_tasks();
  CHECK(f.is_success());
  CHECK(ch.read_outbound<int>() == 42);
}

TEST_CASE("write() rethrows the write's failure") {
  EmbeddedChannel ch{std::make_shared<FailingWrites>()};
  auto ac = IntChannel::wrap(ch);
  auto f = ch.event_loop().spawn(write_one(ac, 1));
  ch.run_pending_tasks();
  REQUIRE(f.is_done());
  CHECK_THROWS_AS(f.get(), IoError);
  CHECK(ch.outbound_messages().empty());
}

TEST_CASE("write() on a closed channel throws ClosedChannelError") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  ch.close();
  auto f = ch.event_loop().spawn(write_one(ac, 1));
  ch.run_pending_tasks();
  REQUIRE(f.is_done());
  CHECK_THROWS_AS(f.get(), ClosedChannelError);
}

TEST_CASE("write() waits while the channel is unwritable and resumes on writability") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  ch.set_writable(false);
  REQUIRE_FALSE(ch.is_writable());
  auto f = ch.event_loop().spawn(write_one(ac, 9));
  ch.run_pending_tasks();
  CHECK_FALSE(f.is_done());
  CHECK(ch.outbound_messages().empty());
  ch.set_writable(true);
  CHECK(f.is_success());
  CHECK(ch.read_outbound<int>() == 9);
}

TEST_CASE("a write waiting for writability fails once the channel closes") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  ch.set_writable(false);
  auto f = ch.event_loop().spawn(write_one(ac, 9));
  ch.run_pending_tasks();
  CHECK_FALSE(f.is_done());
  ch.close();
  REQUIRE(f.is_done());
  CHECK_THROWS_AS(f.get(), ClosedChannelError);
}

// Holds every write it sees (its promise pending) until release() passes them on.
class HeldWrites final : public ChannelOutboundHandler {
 public:
  void handler_added(ChannelHandlerContext& ctx) override { ctx_ = &ctx; }
  void write(ChannelHandlerContext&, Message msg, ChannelPromise promise) override {
    held_.emplace_back(std::move(msg), std::move(promise));
  }
  void flush(ChannelHandlerContext&) override {}
  std::size_t held() const noexcept { return held_.size(); }
  void release() {
    for (auto& [msg, promise] : held_) ctx_->write(std::move(msg), std::move(promise));
    held_.clear();
    ctx_->flush();
  }

 private:
  ChannelHandlerContext* ctx_ = nullptr;
  std::vector<std::pair<Message, ChannelPromise>> held_;
};

constexpr AsyncChannelOptions kQueued{.write_completion = AsyncWriteCompletion::queued};

Task<void> write_three(IntChannel& ac) {
  co_await ac.outbound().write(1);
  co_await ac.outbound().write(2);
  co_await ac.outbound().write(3);
}

TEST_CASE("write() waits for the write to complete by default") {
  auto held = std::make_shared<HeldWrites>();
  EmbeddedChannel ch{held};
  auto ac = IntChannel::wrap(ch);
  auto f = ch.event_loop().spawn(write_three(ac));
  ch.run_pending_tasks();
  CHECK(held->held() == 1);
  CHECK_FALSE(f.is_done());
  held->release();  // 1 completes; the task writes 2
  CHECK(held->held() == 1);
  CHECK_FALSE(f.is_done());
  held->release();
  held->release();
  CHECK(f.is_success());
  CHECK(ch.read_outbound<int>() == 1);
  CHECK(ch.read_outbound<int>() == 2);
  CHECK(ch.read_outbound<int>() == 3);
}

TEST_CASE("write() under AsyncWriteCompletion::queued goes on once the write is queued") {
  auto held = std::make_shared<HeldWrites>();
  EmbeddedChannel ch{held};
  auto ac = IntChannel::wrap(ch, kQueued);
  auto f = ch.event_loop().spawn(write_three(ac));
  ch.run_pending_tasks();
  CHECK(held->held() == 3);  // none completed, all three on their way
  CHECK(f.is_success());
  held->release();
  CHECK(ch.read_outbound<int>() == 1);
  CHECK(ch.read_outbound<int>() == 2);
  CHECK(ch.read_outbound<int>() == 3);
}

TEST_CASE("a queued write() still waits while the channel is unwritable") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch, kQueued);
  ch.set_writable(false);
  auto f = ch.event_loop().spawn(write_one(ac, 9));
  ch.run_pending_tasks();
  CHECK_FALSE(f.is_done());
  CHECK(ch.outbound_messages().empty());
  ch.set_writable(true);
  CHECK(f.is_success());
  CHECK(ch.read_outbound<int>() == 9);
}

TEST_CASE("a queued write() on a closed channel throws ClosedChannelError") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch, kQueued);
  ch.close();
  auto f = ch.event_loop().spawn(write_one(ac, 1));
  ch.run_pending_tasks();
  REQUIRE(f.is_done());
  CHECK_THROWS_AS(f.get(), ClosedChannelError);
}

TEST_CASE("a queued write() waiting for writability fails once the channel closes") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch, kQueued);
  ch.set_writable(false);
  auto f = ch.event_loop().spawn(write_one(ac, 9));
  ch.run_pending_tasks();
  CHECK_FALSE(f.is_done());
  ch.close();
  REQUIRE(f.is_done());
  CHECK_THROWS_AS(f.get(), ClosedChannelError);
}

TEST_CASE("a queued write() does not throw the failure of its write") {
  EmbeddedChannel ch{std::make_shared<FailingWrites>()};
  auto ac = IntChannel::wrap(ch, kQueued);
  auto f = ch.event_loop().spawn(write_one(ac, 1));
  ch.run_pending_tasks();
  CHECK(f.is_success());
  CHECK(ch.outbound_messages().empty());
}

TEST_CASE("write_all() writes every message with one flush") {
  auto flushes = std::make_shared<FlushCounter>();
  EmbeddedChannel ch{flushes};
  auto ac = IntChannel::wrap(ch);
  auto body = [](IntChannel& a) -> Task<void> {
    // Ranges are named first: g++ 12 cannot keep an initializer list's array across co_await.
    std::vector<int> batch{1, 2, 3};
    co_await a.outbound().write_all(batch);  // copied from an lvalue
    co_await a.outbound().write_all(std::vector<int>());
    std::vector<int> last{4};
    co_await a.outbound().write_all(std::move(last));  // moved from an rvalue
  };
  const int before = flushes->flushes;
  auto f = ch.event_loop().spawn(body(ac));
  ch.run_pending_tasks();
  CHECK(f.is_success());
  CHECK(flushes->flushes - before == 2);
  for (int i = 1; i <= 4; ++i) CHECK(ch.read_outbound<int>() == i);
}

TEST_CASE("write_all() rethrows a failed write") {
  EmbeddedChannel ch{std::make_shared<FailingWrites>()};
  auto ac = IntChannel::wrap(ch);
  auto body = [](IntChannel& a) -> Task<void> {
    std::vector<int> batch{1, 2, 3};
    co_await a.outbound().write_all(std::move(batch));
  };
  auto f = ch.event_loop().spawn(body(ac));
  ch.run_pending_tasks();
  REQUIRE(f.is_done());
  CHECK_THROWS_AS(f.get(), IoError);
}

TEST_CASE("finish() shuts the output down and the input stays open") {
  EmbeddedChannel ch;
  ch.set_allow_half_closure(true);
  auto ac = IntChannel::wrap(ch);
  auto body = [](IntChannel& a) -> Task<int> {
    co_await a.outbound().write(1);
    co_await a.outbound().finish();
    auto v = co_await a.inbound().next();
    co_return *v;
  };
  auto f = ch.event_loop().spawn(body(ac));
  ch.run_pending_tasks();
  CHECK(ch.is_output_shutdown());
  CHECK(ch.read_outbound<int>() == 1);
  ch.write_inbound(11);
  REQUIRE(f.is_done());
  CHECK(f.get() == 11);
}

TEST_CASE("close() closes the channel") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  auto body = [](IntChannel& a) -> Task<void> { co_await a.close(); };
  auto f = ch.event_loop().spawn(body(ac));
  ch.run_pending_tasks();
  CHECK(f.is_success());
  CHECK_FALSE(ch.is_open());
}

TEST_CASE("execute_then_close closes the channel after the body returns") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  auto run = [](IntChannel& a) -> Task<int> {
    auto body = [](auto& inbound, auto& outbound) -> Task<int> {
      auto v = co_await inbound.next();
      co_await outbound.write(*v * 2);
      co_return *v;
    };
    co_return co_await a.execute_then_close(body);
  };
  auto f = ch.event_loop().spawn(run(ac));
  ch.run_pending_tasks();
  CHECK(ch.is_open());
  ch.write_inbound(21);
  REQUIRE(f.is_done());
  CHECK(f.get() == 21);
  CHECK(ch.read_outbound<int>() == 42);
  CHECK_FALSE(ch.is_open());
}

TEST_CASE("execute_then_close closes the channel and rethrows when the body throws") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  auto run = [](IntChannel& a) -> Task<void> {
    auto body = [](auto& inbound, auto&) -> Task<void> {
      co_await inbound.next();
      throw InvalidArgumentError("bad request");
    };
    co_await a.execute_then_close(body);
  };
  auto f = ch.event_loop().spawn(run(ac));
  ch.write_inbound(1);
  REQUIRE(f.is_done());
  CHECK_THROWS_WITH_AS(f.get(), "bad request", InvalidArgumentError);
  CHECK_FALSE(ch.is_open());
}

TEST_CASE("wrap() off the channel's loop throws IllegalStateError") {
  AsyncTestingEventLoop loop;
  auto ch = std::make_shared<SharedTestChannel>(loop);
  CHECK_THROWS_AS(IntChannel::wrap(*ch), IllegalStateError);
  CHECK(ch->pipeline().empty());
}

TEST_CASE("wrap() refuses watermarks that cannot work") {
  EmbeddedChannel ch;
  CHECK_THROWS_AS(IntChannel::wrap(ch, {.low_watermark = 0, .high_watermark = 4}),
                  InvalidArgumentError);
  CHECK_THROWS_AS(IntChannel::wrap(ch, {.low_watermark = 5, .high_watermark = 4}),
                  InvalidArgumentError);
}

TEST_CASE("an AsyncChannel keeps a channel owned by a shared_ptr alive") {
  EmbeddedEventLoop loop;
  auto ch = std::make_shared<SharedTestChannel>(loop);
  std::weak_ptr<SharedTestChannel> weak = ch;
  std::optional<IntChannel> ac(IntChannel::wrap(*ch));
  ch.reset();
  CHECK_FALSE(weak.expired());
  IntChannel moved(std::move(*ac));
  ac.reset();
  CHECK_FALSE(weak.expired());
  CHECK(moved.channel().pipeline().names() == std::vector<std::string>{"async-channel"});
  { IntChannel gone(std::move(moved)); }
  CHECK(weak.expired());
}

TEST_CASE("dropping the AsyncChannel takes its handler out of the pipeline") {
  EmbeddedChannel ch;
  {
    auto ac = IntChannel::wrap(ch);
    CHECK(ch.pipeline().get("async-channel") != nullptr);
  }
  CHECK(ch.pipeline().get("async-channel") == nullptr);
  ch.write_inbound(3);
  CHECK(ch.read_inbound<int>() == 3);  // the tail gets the messages again
}

TEST_CASE("a slow consumer never has more than the high watermark buffered") {
  EmbeddedChannel ch;
  ch.freeze_time();
  auto ac = IntChannel::wrap(ch, {.low_watermark = 2, .high_watermark = 16});
  constexpr int kMessages = 10'000;
  std::size_t max_buffered = 0;
  bool paused_seen = false;
  int received = 0;
  auto consumer = [](IntChannel& a, int& received, std::size_t& max_buffered) -> Task<void> {
    while (auto v = co_await a.inbound().next()) {
      CHECK(*v == received);
      ++received;
      max_buffered = std::max(max_buffered, a.inbound().buffered());
      co_await sleep_for(1ms);
    }
  };
  auto done = ch.event_loop().spawn(consumer(ac, received, max_buffered));
  ch.run_pending_tasks();
  for (int i = 0; i < kMessages; ++i) {
    ch.write_inbound(i);  // three messages per millisecond the consumer takes one
    max_buffered = std::max(max_buffered, ac.inbound().buffered());
    paused_seen = paused_seen || ac.inbound().reading_paused();
    if (i % 3 == 2) ch.advance_by(1ms);
  }
  while (received < kMessages) {
    ch.advance_by(1ms);
    max_buffered = std::max(max_buffered, ac.inbound().buffered());
  }
  CHECK(paused_seen);
  CHECK(max_buffered == 16);
  CHECK(ch.pending_inbound_messages().empty());
  ch.advance_by(1ms);  // the consumer's last sleep: it then waits in next()
  ch.close();
  CHECK(done.is_success());
  CHECK(received == kMessages);
}

TEST_CASE("next() and write() allocate nothing per message in steady state") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  auto echo = [](IntChannel& a) -> Task<void> {
    while (auto v = co_await a.inbound().next()) co_await a.outbound().write(*v + 1);
  };
  auto done = ch.event_loop().spawn(echo(ac));
  ch.run_pending_tasks();
  for (int i = 0; i < 100; ++i) {
    ch.write_inbound(i);
    REQUIRE(ch.read_outbound<int>() == i + 1);
  }
  AllocationScope scope;
  for (int i = 0; i < 1'000; ++i) {
    ch.write_inbound(i);
    REQUIRE(ch.read_outbound<int>() == i + 1);
  }
  CHECK(scope.count() == 0);
  ch.close();
  CHECK(done.is_success());
}

TEST_CASE("queued write() allocates nothing per message in steady state") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch, kQueued);
  auto echo = [](IntChannel& a) -> Task<void> {
    while (auto v = co_await a.inbound().next()) co_await a.outbound().write(*v + 1);
  };
  auto done = ch.event_loop().spawn(echo(ac));
  ch.run_pending_tasks();
  for (int i = 0; i < 100; ++i) {
    ch.write_inbound(i);
    REQUIRE(ch.read_outbound<int>() == i + 1);
  }
  AllocationScope scope;
  for (int i = 0; i < 1'000; ++i) {
    ch.write_inbound(i);
    REQUIRE(ch.read_outbound<int>() == i + 1);
  }
  CHECK(scope.count() == 0);
  ch.close();
  CHECK(done.is_success());
}

TEST_CASE("a second task awaiting next() at the same time is refused") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  std::optional<int> a, b;
  auto f1 = ch.event_loop().spawn(next_into(ac, a));
  auto f2 = ch.event_loop().spawn(next_into(ac, b));
  ch.run_pending_tasks();
  REQUIRE(f2.is_done());
  CHECK_THROWS_AS(f2.get(), IllegalStateError);
  ch.write_inbound(1);
  CHECK(f1.is_success());
  CHECK(a == 1);
}

TEST_CASE("cancelling a task waiting in next() wakes it with CancelledError") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  auto body = [](IntChannel& a, std::string& log) -> Task<void> {
    try {
      co_await a.inbound().next();
      log = "got a message";
    } catch (const CancelledError&) {
      log = "cancelled";
    }
  };
  std::string log;
  auto f = ch.event_loop().spawn(body(ac, log));
  ch.run_pending_tasks();
  CHECK(f.cancel());
  CHECK(log == "cancelled");
  ch.write_inbound(1);  // nobody waits any more: it is buffered
  CHECK(ac.inbound().buffered() == 1);
}

TEST_CASE("cancelling a task whose write waits for writability wakes it with CancelledError") {
  EmbeddedChannel ch;
  auto ac = IntChannel::wrap(ch);
  ch.set_writable(false);
  auto body = [](IntChannel& a, std::string& log) -> Task<void> {
    try {
      co_await a.outbound().write(1);
      log = "written";
    } catch (const CancelledError&) {
      log = "cancelled";
    }
  };
  std::string log;
  auto f = ch.event_loop().spawn(body(ac, log));
  ch.run_pending_tasks();
  CHECK(log.empty());
  CHECK(f.cancel());
  CHECK(log == "cancelled");
  ch.set_writable(true);  // the cancelled write is not issued
  CHECK(ch.outbound_messages().empty());
}

namespace {
// A message whose copy throws for the value 2.
struct PickyCopy {
  explicit PickyCopy(int v) : value(v) {}
  PickyCopy(const PickyCopy& o) : value(o.value) {
    if (value == 2) throw InvalidArgumentError("cannot copy 2");
  }
  PickyCopy(PickyCopy&&) noexcept = default;
  int value;
};
}  // namespace

TEST_CASE("write_all() reports an element that cannot be copied and sends the ones before it") {
  EmbeddedChannel ch;
  auto ac = AsyncChannel<int, PickyCopy>::wrap(ch);
  auto body = [](AsyncChannel<int, PickyCopy>& a) -> Task<void> {
    std::vector<PickyCopy> batch;
    for (int i = 1; i <= 3; ++i) batch.emplace_back(i);
    co_await a.outbound().write_all(batch);
  };
  auto f = ch.event_loop().spawn(body(ac));
  ch.run_pending_tasks();
  REQUIRE(f.is_done());
  CHECK_THROWS_WITH_AS(f.get(), "cannot copy 2", InvalidArgumentError);
  REQUIRE(ch.outbound_messages().size() == 1);
  CHECK(ch.read_outbound<PickyCopy>()->value == 1);
}

TEST_CASE("dropping a paused AsyncChannel hands reading back to the channel") {
  EmbeddedChannel ch;
  {
    auto ac = IntChannel::wrap(ch, {.low_watermark = 1, .high_watermark = 2});
    ch.write_inbound(1, 2);
    CHECK(ac.inbound().reading_paused());
    CHECK_FALSE(ch.config().auto_read());
    ch.write_inbound(3);  // waits in the channel
    CHECK(ac.inbound().buffered() == 2);
  }
  CHECK(ch.config().auto_read());
  CHECK(ch.read_inbound<int>() == 3);  // read again, now reaching the tail
}
