// Tests of the shutdown_output operation: Channel::shutdown_output() goes through the pipeline's
// outbound handlers to the transport, so a handler can send a last word before the half-close.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_events.hpp>
#include <trellis/pipeline/channel_handler_mask.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;

namespace {

using Log = std::vector<std::string>;

// Logs writes, flushes and output shutdowns, and passes them on.
class OutboundLog : public ChannelOutboundHandler {
 public:
  explicit OutboundLog(std::shared_ptr<Log> log) : log_(std::move(log)) {}
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override {
    log_->push_back("write");
    ctx.write(std::move(msg), std::move(promise));
  }
  void flush(ChannelHandlerContext& ctx) override {
    log_->push_back("flush");
    ctx.flush();
  }
  void shutdown_output(ChannelHandlerContext& ctx, ChannelPromise promise) override {
    log_->push_back("shutdown_output");
    ctx.shutdown_output(std::move(promise));
  }

 private:
  std::shared_ptr<Log> log_;
};

// Writes a last message on shutdown_output and passes the shutdown on once it was written.
class Farewell : public ChannelOutboundHandler {
 public:
  void shutdown_output(ChannelHandlerContext& ctx, ChannelPromise promise) override {
    ChannelPromise written = ctx.new_promise();
    auto* context = &ctx;
    written.future().add_listener([context, promise](const Future<void>&) mutable {
      context->shutdown_output(std::move(promise));
    });
    ctx.write_and_flush(Message(std::string("bye")), std::move(written));
  }
};

// Holds the shutdown until the test releases it.
class Holder : public ChannelOutboundHandler {
 public:
  void shutdown_output(ChannelHandlerContext& ctx, ChannelPromise promise) override {
    ctx_ = &ctx;
    held_ = std::move(promise);
  }
  void release() { ctx_->shutdown_output(std::move(held_)); }

 private:
  ChannelHandlerContext* ctx_ = nullptr;
  ChannelPromise held_;
};

}  // namespace

TEST_CASE("shutdown_output passes through the outbound handlers to the transport") {
  auto log = std::make_shared<Log>();
  auto ch = EmbeddedChannel::create(std::make_shared<OutboundLog>(log));
  auto done = ch->shutdown_output();
  CHECK(done.is_success());
  CHECK(*log == Log{"shutdown_output"});
  CHECK(ch->is_output_shutdown());
  REQUIRE(ch->user_events().size() == 1);
  CHECK(ch->user_events().front().is<ChannelOutputShutdownEvent>());
  CHECK(ch->is_open());  // a half-close
}

TEST_CASE("a handler writes a last message before it passes shutdown_output on") {
  auto ch = EmbeddedChannel::create(std::make_shared<Farewell>());
  auto done = ch->shutdown_output();
  CHECK(done.is_success());
  CHECK(ch->is_output_shutdown());
  auto last = ch->read_outbound<std::string>();
  REQUIRE(last);
  CHECK(*last == "bye");  // written, not failed by the shutdown
}

TEST_CASE("the output is shut down only when the handler passes the operation on") {
  auto holder = std::make_shared<Holder>();
  auto ch = EmbeddedChannel::create(holder);
  auto done = ch->shutdown_output();
  CHECK_FALSE(done.is_done());
  CHECK_FALSE(ch->is_output_shutdown());
  holder->release();
  CHECK(done.is_success());
  CHECK(ch->is_output_shutdown());
}

TEST_CASE("ctx.shutdown_output starts at the handler before, and masks route it") {
  auto log = std::make_shared<Log>();
  auto ch = EmbeddedChannel::create();
  ch->pipeline().add_last("log", std::make_shared<OutboundLog>(log));
  ch->pipeline().add_last("after", std::make_shared<OutboundLog>(std::make_shared<Log>()));
  CHECK((handler_mask::of<OutboundLog>() & handler_mask::kShutdownOutput) != 0);
  CHECK((handler_mask::of<Holder>() & handler_mask::kFlush) == 0);
  ChannelHandlerContext* after = ch->pipeline().context("after");
  REQUIRE(after != nullptr);
  ChannelPromise p = ch->new_promise();
  after->shutdown_output(p);
  ch->run_pending_tasks();
  CHECK(p.future().is_success());
  CHECK(*log == Log{"shutdown_output"});
  CHECK(ch->is_output_shutdown());
}

TEST_CASE("shutdown_output on a closed channel fails its future") {
  auto log = std::make_shared<Log>();
  auto ch = EmbeddedChannel::create(std::make_shared<OutboundLog>(log));
  ch->close();
  auto done = ch->shutdown_output();
  REQUIRE(done.is_done());
  CHECK_FALSE(done.is_success());
}
