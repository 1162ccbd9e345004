// Tests of CombinedChannelDuplexHandler: every event reaches the half that takes it, with the
// combined handler's context; both halves see handler_added and handler_removed; one half can be
// removed alone; exceptions of the halves go where those of a handler go; the combined handler
// takes exactly the events its halves take.
#include <doctest/doctest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_mask.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/pipeline/combined_channel_duplex_handler.hpp>
#include <trellis/pipeline/message_to_message_codec.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;
namespace mask = trellis::handler_mask;

namespace {

using Log = std::vector<std::string>;

// What the halves record: the events in order, and the handler each saw behind its context.
struct Record {
  Log log;
  std::vector<const ChannelHandler*> handlers;
  bool throw_on_read = false;
  bool throw_on_write = false;
  bool throw_on_in_added = false;
  bool throw_on_in_removed = false;

  void note(const char* what, const ChannelHandlerContext& ctx) {
    log.emplace_back(what);
    handlers.push_back(&ctx.handler());
  }
};

// Takes every inbound event, logs it and passes it on.
class RecIn : public ChannelInboundHandler {
 public:
  explicit RecIn(std::shared_ptr<Record> r) : r_(std::move(r)) {}
  void handler_added(ChannelHandlerContext& ctx) override {
    note("in:added", ctx);
    if (r_->throw_on_in_added) throw std::runtime_error("in added");
  }
  void handler_removed(ChannelHandlerContext& ctx) override {
    note("in:removed", ctx);
    if (r_->throw_on_in_removed) throw std::runtime_error("in removed");
  }
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr e) override {
    note("in:exception", ctx);
    ctx.fire_exception_caught(e);
  }
  void channel_registered(ChannelHandlerContext& ctx) override {
    note("in:registered", ctx);
    ctx.fire_channel_registered();
  }
  void channel_unregistered(ChannelHandlerContext& ctx) override {
    note("in:unregistered", ctx);
    ctx.fire_channel_unregistered();
  }
  void channel_active(ChannelHandlerContext& ctx) override {
    note("in:active", ctx);
    ctx.fire_channel_active();
  }
  void channel_inactive(ChannelHandlerContext& ctx) override {
    note("in:inactive", ctx);
    ctx.fire_channel_inactive();
  }
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    note("in:read", ctx);
    if (r_->throw_on_read) throw std::runtime_error("read failed");
    ctx.fire_channel_read(std::move(msg));
  }
  void channel_read_complete(ChannelHandlerContext& ctx) override {
    note("in:read_complete", ctx);
    ctx.fire_channel_read_complete();
  }
  void user_event_triggered(ChannelHandlerContext& ctx, Message event) override {
    note("in:user_event", ctx);
    ctx.fire_user_event_triggered(std::move(event));
  }
  void channel_writability_changed(ChannelHandlerContext& ctx) override {
    note("in:writability", ctx);
    ctx.fire_channel_writability_changed();
  }

 private:
  void note(const char* what, const ChannelHandlerContext& ctx) { r_->note(what, ctx); }
  std::shared_ptr<Record> r_;
};

// Takes every outbound operation, logs it and passes it on.
class RecOut : public ChannelOutboundHandler {
 public:
  explicit RecOut(std::shared_ptr<Record> r) : r_(std::move(r)) {}
  void handler_added(ChannelHandlerContext& ctx) override { note("out:added", ctx); }
  void handler_removed(ChannelHandlerContext& ctx) override { note("out:removed", ctx); }
  void bind(ChannelHandlerContext& ctx, const SocketAddress& local, ChannelPromise p) override {
    note("out:bind", ctx);
    ctx.bind(local, std::move(p));
  }
  void connect(ChannelHandlerContext& ctx, const SocketAddress& remote,
               const std::optional<SocketAddress>& local, ChannelPromise p) override {
    note("out:connect", ctx);
    ctx.connect(remote, local, std::move(p));
  }
  void disconnect(ChannelHandlerContext& ctx, ChannelPromise p) override {
    note("out:disconnect", ctx);
    ctx.disconnect(std::move(p));
  }
  void close(ChannelHandlerContext& ctx, ChannelPromise p) override {
    note("out:close", ctx);
    ctx.close(std::move(p));
  }
  void read(ChannelHandlerContext& ctx) override {
    note("out:read", ctx);
    ctx.read();
  }
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise p) override {
    note("out:write", ctx);
    if (r_->throw_on_write) throw std::runtime_error("write failed");
    ctx.write(std::move(msg), std::move(p));
  }
  void flush(ChannelHandlerContext& ctx) override {
    note("out:flush", ctx);
    ctx.flush();
  }
  void shutdown_output(ChannelHandlerContext& ctx, ChannelPromise p) override {
    note("out:shutdown_output", ctx);
    ctx.shutdown_output(std::move(p));
  }

 private:
  void note(const char* what, const ChannelHandlerContext& ctx) { r_->note(what, ctx); }
  std::shared_ptr<Record> r_;
};

using Combined = CombinedChannelDuplexHandler<RecIn, RecOut>;

std::shared_ptr<Combined> make_combined(const std::shared_ptr<Record>& r) {
  return std::make_shared<Combined>(std::piecewise_construct, std::forward_as_tuple(r),
                                    std::forward_as_tuple(r));
}

// Halves that take one event each.
class ReadOnly : public ChannelInboundHandler {
 public:
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    ctx.fire_channel_read(std::move(msg));
  }
};
class FlushOnly : public ChannelOutboundHandler {
 public:
  void flush(ChannelHandlerContext& ctx) override { ctx.flush(); }
};

// Records the exceptions that reach it.
class Catcher : public ChannelInboundHandler {
 public:
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr e) override {
    caught.push_back(e);
    ctx.fire_exception_caught(e);
  }
  std::vector<std::exception_ptr> caught;
};

// The log as one line: what a failed check prints.
std::string joined(const Log& log) {
  std::string s;
  for (const auto& e : log) s += (s.empty() ? "" : " ") + e;
  return s;
}

std::string what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  }
}

std::string nested_what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::nested_exception& n) {
    return what_of(n.nested_ptr());
  } catch (...) {
    return "not nested";
  }
}

class IntToString : public MessageToMessageCodec<int, std::string> {
 protected:
  void decode(ChannelHandlerContext&, int msg, std::vector<Message>& out) override {
    out.emplace_back(std::to_string(msg));
  }
  void encode(ChannelHandlerContext&, std::string msg, std::vector<Message>& out) override {
    out.emplace_back(static_cast<int>(msg.size()));
  }
};

}  // namespace

TEST_CASE("the combined handler takes exactly the events its halves take") {
  CHECK(mask::of<Combined>() == mask::kAll);
  CHECK(mask::of<CombinedChannelDuplexHandler<ReadOnly, FlushOnly>>() ==
        (mask::kChannelRead | mask::kFlush));
  CHECK(mask::of<IntToString>() == (mask::kChannelRead | mask::kWrite));
}

TEST_CASE("every event reaches its half, with the combined handler's context") {
  auto r = std::make_shared<Record>();
  auto combined = make_combined(r);
  EmbeddedChannel ch{combined};
  CHECK(joined(r->log) == "in:added out:added in:registered in:active out:read");
  r->log.clear();

  ch.write_inbound(1);
  CHECK(ch.read_inbound<int>() == 1);
  ch.pipeline().fire_user_event_triggered(Message(std::string("evt")));
  ch.set_writable(false);
  ch.pipeline().fire_exception_caught(std::make_exception_ptr(std::runtime_error("boom")));
  CHECK_THROWS_WITH_AS(ch.check_exception(), "boom", std::runtime_error);
  CHECK(joined(r->log) ==
        "in:read in:read_complete out:read in:user_event in:writability in:exception");
  r->log.clear();

  ch.set_writable(true);
  r->log.clear();
  ch.write_outbound(std::string("x"));
  CHECK(ch.read_outbound<std::string>() == "x");
  ch.read();
  ch.bind(SocketAddress::embedded("local"), ch.new_promise());
  ch.connect(SocketAddress::embedded("remote"), ch.new_promise());
  CHECK(joined(r->log) == "out:write out:flush out:read out:bind out:connect");
  r->log.clear();

  ch.shutdown_output();
  CHECK(joined(r->log) == "out:shutdown_output in:user_event");  // ChannelOutputShutdownEvent
  r->log.clear();

  ch.close();
  ch.run_pending_tasks();
  CHECK(joined(r->log) == "out:close in:inactive in:unregistered in:removed out:removed");
  for (const ChannelHandler* h : r->handlers) CHECK(h == combined.get());
}

TEST_CASE("disconnect reaches the outbound half") {
  auto r = std::make_shared<Record>();
  EmbeddedChannel ch{make_combined(r)};
  r->log.clear();
  ch.disconnect();
  REQUIRE_FALSE(r->log.empty());
  CHECK(r->log.front() == "out:disconnect");
}

TEST_CASE("handler_added and handler_removed reach both halves; a re-added handler has both") {
  auto r = std::make_shared<Record>();
  auto combined = make_combined(r);
  EmbeddedChannel ch;
  ch.pipeline().add_last("c", combined);
  CHECK(joined(r->log) == "in:added out:added");
  ch.pipeline().remove("c");
  CHECK(joined(r->log) == "in:added out:added in:removed out:removed");
  CHECK(combined->is_inbound_handler_removed());
  CHECK(combined->is_outbound_handler_removed());
  CHECK_THROWS_AS(combined->remove_inbound_handler(), IllegalStateError);

  r->log.clear();
  ch.pipeline().add_last("c", combined);
  CHECK_FALSE(combined->is_inbound_handler_removed());
  ch.write_inbound(2);
  ch.write_outbound(3);
  CHECK(joined(r->log) ==
        "in:added out:added in:read in:read_complete out:read out:write out:flush");
  ch.finish_and_release_all();
}

TEST_CASE("a half is removed alone; its events then pass the handler by") {
  auto r = std::make_shared<Record>();
  auto combined = make_combined(r);
  CHECK_THROWS_AS(combined->remove_inbound_handler(), IllegalStateError);  // not added yet
  EmbeddedChannel ch{combined};
  r->log.clear();

  combined->remove_inbound_handler();
  CHECK(joined(r->log) == "in:removed");
  CHECK(combined->is_inbound_handler_removed());
  CHECK_FALSE(combined->is_outbound_handler_removed());
  combined->remove_inbound_handler();  // already gone: nothing happens
  r->log.clear();
  ch.write_inbound(4);
  CHECK(ch.read_inbound<int>() == 4);
  ch.pipeline().fire_exception_caught(std::make_exception_ptr(std::runtime_error("passes")));
  CHECK_THROWS_WITH(ch.check_exception(), "passes");
  ch.write_outbound(5);
  CHECK(ch.read_outbound<int>() == 5);
  CHECK(joined(r->log) == "out:read out:write out:flush");  // auto_read after the read

  r->log.clear();
  combined->remove_outbound_handler();
  CHECK(joined(r->log) == "out:removed");
  r->log.clear();
  ch.write_outbound(6);
  CHECK(ch.read_outbound<int>() == 6);
  ch.pipeline().remove(*combined);  // the halves are gone already: no second handler_removed
  ch.finish();
  CHECK(r->log.empty());
}

TEST_CASE("a half removed while handling an event finishes it, later events pass by") {
  // The inbound half of a codec removes itself on the first message: the second one passes.
  class Once : public ChannelInboundHandler {
   public:
    explicit Once(CombinedChannelDuplexHandler<Once, FlushOnly>** self) : self_(self) {}
    void channel_read(ChannelHandlerContext& ctx, Message msg) override {
      ++reads;
      (*self_)->remove_inbound_handler();
      ctx.fire_channel_read(Message(msg.get<int>() * 10));
    }
    int reads = 0;

   private:
    CombinedChannelDuplexHandler<Once, FlushOnly>** self_;
  };
  using OnceCombined = CombinedChannelDuplexHandler<Once, FlushOnly>;
  OnceCombined* raw = nullptr;
  auto combined = std::make_shared<OnceCombined>(std::piecewise_construct,
                                                 std::forward_as_tuple(&raw), std::tuple<>());
  raw = combined.get();
  EmbeddedChannel ch{combined};
  ch.write_inbound(1, 2);
  CHECK(ch.read_inbound<int>() == 10);
  CHECK(ch.read_inbound<int>() == 2);
  CHECK(combined->is_inbound_handler_removed());
  ch.finish();
}

TEST_CASE("exceptions of the halves go where a handler's go") {
  auto r = std::make_shared<Record>();
  auto combined = make_combined(r);
  auto catcher = std::make_shared<Catcher>();
  EmbeddedChannel ch{combined, catcher};
  r->log.clear();

  SUBCASE("the inbound half throws: the next handler's exception_caught, not its own") {
    r->throw_on_read = true;
    CHECK_THROWS_WITH(ch.write_inbound(1), "read failed");  // it reached the tail
    REQUIRE(catcher->caught.size() == 1);
    CHECK(what_of(catcher->caught[0]) == "read failed");
    CHECK(joined(r->log) == "in:read in:read_complete out:read");
  }
  SUBCASE("the outbound half throws: the write's promise fails; without one, exception_caught") {
    r->throw_on_write = true;
    auto p = ch.new_promise();
    ch.write(Message(1), p);
    REQUIRE(p.is_done());
    CHECK_FALSE(p.is_success());
    CHECK(catcher->caught.empty());
    ch.write(Message(2));
    REQUIRE(catcher->caught.size() == 1);
    CHECK(what_of(catcher->caught[0]) == "write failed");
    CHECK_THROWS_WITH(ch.check_exception(), "write failed");
  }
  SUBCASE("a half's handler_removed throws: ChannelPipelineError, the other half still goes") {
    r->throw_on_in_removed = true;
    ch.pipeline().remove(*combined);
    CHECK(joined(r->log) == "in:removed out:removed");
    REQUIRE(catcher->caught.size() == 1);
    CHECK(nested_what_of(catcher->caught[0]) == "in removed");
    CHECK_THROWS_AS(ch.check_exception(), ChannelPipelineError);
  }
  ch.finish_and_release_all();
}

TEST_CASE("handler_added of the inbound half throws: the outbound half is added, then both go") {
  auto r = std::make_shared<Record>();
  r->throw_on_in_added = true;
  EmbeddedChannel ch;
  ch.pipeline().add_last("c", make_combined(r));
  CHECK(joined(r->log) == "in:added out:added in:removed out:removed");
  CHECK(ch.pipeline().get("c") == nullptr);
  CHECK_THROWS_AS(ch.check_exception(), ChannelPipelineError);
}

TEST_CASE("MessageToMessageCodec's halves can be removed on their own") {
  auto codec = std::make_shared<IntToString>();
  EmbeddedChannel ch{codec};
  ch.write_inbound(12);
  CHECK(ch.read_inbound<std::string>() == "12");
  codec->remove_outbound_handler();
  ch.write_outbound(std::string("abc"));
  CHECK(ch.read_outbound<std::string>() == "abc");  // no longer encoded
  ch.write_inbound(3);
  CHECK(ch.read_inbound<std::string>() == "3");  // still decoded
  ch.finish();
}
