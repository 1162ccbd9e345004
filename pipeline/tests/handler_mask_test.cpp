// Tests of handler masks: which events a handler type overrides, and that events pass by the
// handlers that do not take them (and still reach every handler that does, in order).
#include <doctest/doctest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_mask.hpp>
#include <trellis/pipeline/simple_channel_inbound_handler.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;
namespace mask = trellis::handler_mask;

namespace {

using Log = std::vector<std::string>;

class ReadOnly : public ChannelInboundHandler {
 public:
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    ctx.fire_channel_read(std::move(msg));
  }
};

class WriteAndReadComplete : public ChannelDuplexHandler {
 public:
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise p) override {
    ctx.write(std::move(msg), std::move(p));
  }

 protected:
  void channel_read_complete(ChannelHandlerContext& ctx) override {
    ctx.fire_channel_read_complete();
  }
};

class Ints : public SimpleChannelInboundHandler<int> {
 protected:
  void channel_read0(ChannelHandlerContext&, int&) override {}

 private:
  void exception_caught(ChannelHandlerContext&, std::exception_ptr) override {}
};

// Overrides nothing: every event passes it by.
class PassThrough : public ChannelDuplexHandler {};

// Logs the events it overrides and passes them on.
class Logger : public ChannelDuplexHandler {
 public:
  Logger(std::string name, std::shared_ptr<Log> log) : name_(std::move(name)), log_(log) {}
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    log("read");
    ctx.fire_channel_read(std::move(msg));
  }
  void channel_read_complete(ChannelHandlerContext& ctx) override {
    log("read_complete");
    ctx.fire_channel_read_complete();
  }
  void user_event_triggered(ChannelHandlerContext& ctx, Message event) override {
    log("user_event");
    ctx.fire_user_event_triggered(std::move(event));
  }
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr e) override {
    log("exception");
    ctx.fire_exception_caught(e);
  }
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise p) override {
    log("write");
    ctx.write(std::move(msg), std::move(p));
  }
  void flush(ChannelHandlerContext& ctx) override {
    log("flush");
    ctx.flush();
  }

 private:
  void log(const char* event) { log_->push_back(name_ + ":" + event); }
  std::string name_;
  std::shared_ptr<Log> log_;
};

// A handler type that overrides nothing, and one derived from it that overrides channel_read.
class Base : public ChannelInboundHandler {};
class Derived : public Base {
 public:
  explicit Derived(std::shared_ptr<Log> log) : log_(std::move(log)) {}
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    log_->push_back("derived:read");
    ctx.fire_channel_read(std::move(msg));
  }

 private:
  std::shared_ptr<Log> log_;
};

}  // namespace

TEST_CASE("a handler's mask holds the events its type overrides, whatever their access") {
  CHECK(mask::of<ReadOnly>() == mask::kChannelRead);
  CHECK(mask::of<WriteAndReadComplete>() == (mask::kWrite | mask::kChannelReadComplete));
  CHECK(mask::of<Ints>() == (mask::kChannelRead | mask::kExceptionCaught));
  CHECK(mask::of<PassThrough>() == 0);
  CHECK(mask::of<ChannelInboundHandler>() == 0);
  CHECK(mask::of<Logger>() ==
        (mask::kChannelRead | mask::kChannelReadComplete | mask::kUserEventTriggered |
         mask::kExceptionCaught | mask::kWrite | mask::kFlush));
  // Outbound bits only for outbound handlers and the other way round.
  CHECK((mask::of<ReadOnly>() & mask::kOutbound) == 0);
}

TEST_CASE("a handler added as a base type takes every event: a derived type may override more") {
  auto log = std::make_shared<Log>();
  auto derived = std::make_shared<Derived>(log);
  std::shared_ptr<Base> as_base = derived;
  CHECK(mask::for_handler(*as_base) == mask::kAll);
  CHECK(mask::for_handler(*derived) == mask::kChannelRead);

  EmbeddedChannel ch;
  ch.pipeline().add_last("derived", as_base);
  ch.write_inbound(1);
  CHECK(*log == Log{"derived:read"});
  CHECK(ch.read_inbound<int>() == 1);
}

TEST_CASE("events pass by handlers that do not take them and reach every one that does") {
  auto log = std::make_shared<Log>();
  EmbeddedChannel ch;
  ch.pipeline().add_last("a", std::make_shared<Logger>("a", log));
  ch.pipeline().add_last("pass1", std::make_shared<PassThrough>());
  ch.pipeline().add_last("read-only", std::make_shared<ReadOnly>());
  ch.pipeline().add_last("pass2", std::make_shared<PassThrough>());
  ch.pipeline().add_last("b", std::make_shared<Logger>("b", log));
  ch.pipeline().add_first("pass0", std::make_shared<PassThrough>());
  ch.pipeline().add_before("b", "pass3", std::make_shared<PassThrough>());
  ch.pipeline().add_after("a", "pass4", std::make_shared<PassThrough>());

  ch.write_inbound(7);
  CHECK(ch.read_inbound<int>() == 7);
  ch.pipeline().fire_user_event_triggered(Message(std::string("evt")));
  ch.pipeline().fire_exception_caught(std::make_exception_ptr(std::runtime_error("boom")));
  CHECK_THROWS_AS(ch.check_exception(), std::runtime_error);
  ch.write_outbound(std::string("out"));
  CHECK(ch.read_outbound<std::string>() == "out");
  CHECK(*log == Log{"a:read", "b:read", "a:read_complete", "b:read_complete", "a:user_event",
                    "b:user_event", "a:exception", "b:exception", "b:write", "a:write", "b:flush",
                    "a:flush"});

  // A replacement takes its own type's mask: the pass-through in b's place passes all by.
  log->clear();
  ch.pipeline().replace("b", "b2", std::make_shared<PassThrough>());
  ch.write_inbound(8);
  CHECK(ch.read_inbound<int>() == 8);
  CHECK(*log == Log{"a:read", "a:read_complete"});
  ch.finish();
}
