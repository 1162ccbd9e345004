// Outbound operations called on a context from another thread are posted to the channel's loop.
// These tests check what such an operation may find when it runs: a neighbour removed and freed
// meanwhile, a pipeline destroyed meanwhile, or a loop that no longer takes tasks. Run under
// ASan and TSan: a walk into freed memory is the failure they catch.
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <trellis/pipeline.hpp>
#include <trellis/testing.hpp>
#include <trellis/testing/async_testing_event_loop.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {

constexpr auto kWait = 10s;

// A channel without a transport, owned by whoever made it; writes are taken and counted.
class LocalChannel final : public Channel {
 public:
  explicit LocalChannel(EventExecutor& loop) : Channel(loop) {}
  bool is_open() const override { return open_; }
  bool is_active() const override { return open_; }
  std::optional<SocketAddress> local_address() const override { return std::nullopt; }
  std::optional<SocketAddress> remote_address() const override { return std::nullopt; }
  std::atomic<int> written{0};

 protected:
  void do_bind(const SocketAddress&) override {}
  void do_connect(const SocketAddress&, const std::optional<SocketAddress>&,
                  ChannelPromise promise) override {
    promise.try_set_value();
  }
  void do_close() override { open_ = false; }
  void do_begin_read() override {}
  void do_write(ChannelOutboundBuffer& out) override {
    while (out.current() != nullptr) {
      ++written;
      out.remove();
    }
  }

 private:
  bool open_ = true;
};

// Counts the writes that pass through it, then forwards them.
class CountingOutbound final : public ChannelOutboundHandler {
 public:
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override {
    ++writes;
    ctx.write(std::move(msg), std::move(promise));
  }
  std::atomic<int> writes{0};
};

class Inbound final : public ChannelInboundHandler {};

// Blocks the loop until released, so that tasks posted meanwhile queue up behind it.
struct LoopGate {
  explicit LoopGate(EventExecutor& loop) {
    // The task holds its own references: the gate may be gone before it has returned.
    loop.execute([entered = entered, opened = open.future()]() mutable {
      entered.set_value();
      opened.wait_for(kWait);
    });
    REQUIRE(entered.future().wait_for(kWait));
  }
  void release() { open.try_set_value(); }
  ~LoopGate() { release(); }
  Promise<void> entered;
  Promise<void> open;
};

}  // namespace

TEST_CASE("a posted write from a context whose neighbour was removed and freed meanwhile") {
  AsyncTestingEventLoop loop;
  LocalChannel ch(loop);
  auto first = std::make_shared<CountingOutbound>();
  auto middle = std::make_shared<CountingOutbound>();
  ch.pipeline()
      .add_last("first", first)
      .add_last("middle", middle)
      .add_last("last", std::make_shared<Inbound>());
  ChannelHandlerContext* last = ch.pipeline().context("last");
  REQUIRE(last != nullptr);

  // On the loop: remove "middle" and "last" (both buried, a reap queued), then hold the loop.
  Promise<void> removed;
  Promise<void> go;
  loop.execute([&] {
    ch.pipeline().remove("last");
    ch.pipeline().remove("middle");
    removed.set_value();
    go.future().wait_for(kWait);
  });
  REQUIRE(removed.future().wait_for(kWait));
  // From this thread: a write through the removed "last", queued behind the reap. The reap
  // frees "middle" (nothing pins it) and keeps "last" (the write pins it).
  auto promise = ChannelPromise::make(&loop);
  last->write_and_flush(Message(ByteBuf::from(std::string_view("x"))), promise);
  go.set_value();
  REQUIRE(promise.future().wait_for(kWait));
  CHECK(promise.future().is_success());
  // The write went on from where "middle" was, to "first" and the channel.
  CHECK(middle->writes == 0);
  CHECK(first->writes == 1);
  CHECK(ch.written == 1);
  loop.submit([&] { ch.close(); }).wait_for(kWait);
  loop.submit([] {}).wait_for(kWait);  // the close's own posted events, before ch goes
}

TEST_CASE("a posted write that finds its pipeline destroyed fails with ClosedChannelError") {
  AsyncTestingEventLoop loop;
  auto ch = std::make_unique<LocalChannel>(loop);
  auto handler = std::make_shared<Inbound>();
  std::weak_ptr<Inbound> watch = handler;
  ch->pipeline().add_last("h", std::move(handler));
  ChannelHandlerContext* ctx = ch->pipeline().context("h");

  auto promise = ChannelPromise::make(&loop);
  Promise<void> fired;
  {
    LoopGate gate(loop);
    ctx->write_and_flush(Message(ByteBuf::from(std::string_view("x"))), promise);
    ch->pipeline().fire_user_event_triggered(Message(1));  // posted too: dropped
    // The owner destroys the channel while both operations wait for the loop.
    ch.reset();
    CHECK_FALSE(watch.expired());  // the pinned context still holds its handler
  }
  REQUIRE(promise.future().wait_for(kWait));
  CHECK_THROWS_AS(promise.future().get(), ClosedChannelError);
  // The last pin freed the context and, with it, the handler.
  loop.submit([] {}).wait_for(kWait);
  CHECK(watch.expired());
}

TEST_CASE("a write posted to a loop that no longer takes tasks fails its promise") {
  auto loop = std::make_unique<AsyncTestingEventLoop>();
  LocalChannel ch(*loop);
  ch.pipeline().add_last("h", std::make_shared<Inbound>());
  ChannelHandlerContext* ctx = ch.pipeline().context("h");
  REQUIRE(loop->shutdown_gracefully(0ns, 1s).wait_for(kWait));

  auto promise = ChannelPromise::make(loop.get());
  CHECK_NOTHROW(ctx->write(Message(ByteBuf::from(std::string_view("x"))), promise));
  REQUIRE(promise.future().is_done());
  CHECK_THROWS_AS(promise.future().get(), RejectedExecutionError);
  // Without a promise there is nobody to tell but the caller.
  CHECK_THROWS_AS(ctx->flush(), RejectedExecutionError);
}

namespace {

// Holds its own channel, as handlers that keep their channel for later do.
class HoldsItsChannel final : public ChannelInboundHandler {
 public:
  void channel_active(ChannelHandlerContext& ctx) override {
    channel = ctx.channel().shared_owner();
    ctx.fire_channel_active();
  }
  std::shared_ptr<Channel> channel;
};

}  // namespace

TEST_CASE("a closed channel's removed contexts let go of their handlers") {
  std::weak_ptr<EmbeddedChannel> watch;
  std::weak_ptr<HoldsItsChannel> handler_watch;
  ChannelHandlerContext* ctx = nullptr;
  {
    auto handler = std::make_shared<HoldsItsChannel>();
    handler_watch = handler;
    auto ch = EmbeddedChannel::create(handler);
    watch = ch;
    REQUIRE(handler->channel == ch);
    ctx = ch->pipeline().context(*handler);
    REQUIRE(ctx != nullptr);
    ch->close();
    ch->run_pending_tasks();
    CHECK(ctx->is_removed());
    // The context stays (other threads may still call it), its handler does not.
    CHECK(handler_watch.expired() == false);  // `handler` is still in scope
  }
  // Channel -> pipeline -> removed context -> handler -> channel was a cycle; it is broken.
  CHECK(handler_watch.expired());
  CHECK(watch.expired());
}
