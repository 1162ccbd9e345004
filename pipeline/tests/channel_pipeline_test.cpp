// Tests of ChannelPipeline and ChannelHandlerContext: event order, run-time modification,
// exceptions, sharability and the allocation budgets of the read and write paths.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <trellis/pipeline/channel.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/doctest_helpers.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;
using trellis::testing::AllocationScope;

namespace {

using Log = std::vector<std::string>;

// Records every event it sees as "name:event" and passes it on.
class Recorder : public ChannelDuplexHandler {
 public:
  Recorder(std::string name, std::shared_ptr<Log> log) : name_(std::move(name)), log_(log) {}

  void handler_added(ChannelHandlerContext&) override { log("added"); }
  void handler_removed(ChannelHandlerContext&) override { log("removed"); }
  void channel_registered(ChannelHandlerContext& ctx) override {
    log("registered");
    ctx.fire_channel_registered();
  }
  void channel_unregistered(ChannelHandlerContext& ctx) override {
    log("unregistered");
    ctx.fire_channel_unregistered();
  }
  void channel_active(ChannelHandlerContext& ctx) override {
    log("active");
    ctx.fire_channel_active();
  }
  void channel_inactive(ChannelHandlerContext& ctx) override {
    log("inactive");
    ctx.fire_channel_inactive();
  }
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    log("read");
    ctx.fire_channel_read(std::move(msg));
  }
  void channel_read_complete(ChannelHandlerContext& ctx) override {
    log("read_complete");
    ctx.fire_channel_read_complete();
  }
  void user_event_triggered(ChannelHandlerContext& ctx, Message evt) override {
    log("user_event");
    ctx.fire_user_event_triggered(std::move(evt));
  }
  void channel_writability_changed(ChannelHandlerContext& ctx) override {
    log("writability");
    ctx.fire_channel_writability_changed();
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
  void read(ChannelHandlerContext& ctx) override {
    log("read_op");
    ctx.read();
  }
  void close(ChannelHandlerContext& ctx, ChannelPromise p) override {
    log("close");
    ctx.close(std::move(p));
  }

 private:
  void log(const char* event) { log_->push_back(name_ + ":" + event); }
  std::string name_;
  std::shared_ptr<Log> log_;
};

Log only(const Log& log, const std::string& event) {
  Log out;
  for (const auto& e : log) {
    if (e.size() > event.size() && e.compare(e.size() - event.size(), event.size(), event) == 0 &&
        e[e.size() - event.size() - 1] == ':') {
      out.push_back(e);
    }
  }
  return out;
}

// Runs fn(ctx, msg) on each read.
template <class Fn>
class OnRead : public ChannelInboundHandler {
 public:
  explicit OnRead(Fn fn) : fn_(std::move(fn)) {}
  void channel_read(ChannelHandlerContext& ctx, Message msg) override { fn_(ctx, std::move(msg)); }

 private:
  Fn fn_;
};
template <class Fn>
std::shared_ptr<OnRead<Fn>> on_read(Fn fn) {
  return std::make_shared<OnRead<Fn>>(std::move(fn));
}

class Sharable : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
};

}  // namespace

TEST_CASE(
    "inbound events go head to tail and outbound operations tail to head through five "
    "handlers") {
  auto log = std::make_shared<Log>();
  EmbeddedChannel ch;
  ch.config();  // unregistered until now
  EmbeddedChannel live{std::make_shared<Recorder>("a", log), std::make_shared<Recorder>("b", log),
                       std::make_shared<Recorder>("c", log), std::make_shared<Recorder>("d", log),
                       std::make_shared<Recorder>("e", log)};
  const Log five_in = {"a", "b", "c", "d", "e"};
  auto names = [](const Log& l) {
    Log out;
    for (const auto& s : l) out.push_back(s.substr(0, s.find(':')));
    return out;
  };
  CHECK(names(only(*log, "added")) == five_in);
  CHECK(names(only(*log, "registered")) == five_in);
  CHECK(names(only(*log, "active")) == five_in);

  log->clear();
  CHECK(live.write_inbound(1));
  CHECK(*log == Log{"a:read", "b:read", "c:read", "d:read", "e:read", "a:read_complete",
                    "b:read_complete", "c:read_complete", "d:read_complete", "e:read_complete",
                    // auto_read: the head asks for more after read_complete, from the tail
                    "e:read_op", "d:read_op", "c:read_op", "b:read_op", "a:read_op"});

  log->clear();
  CHECK(live.write_outbound(2));
  CHECK(*log == Log{"e:write", "d:write", "c:write", "b:write", "a:write", "e:flush", "d:flush",
                    "c:flush", "b:flush", "a:flush"});
  CHECK(live.read_outbound<int>() == 2);
  CHECK(live.read_inbound<int>() == 1);

  log->clear();
  live.pipeline().fire_user_event_triggered(std::string("evt"));
  CHECK(names(only(*log, "user_event")) == five_in);
  CHECK(live.user_events().take_front().get<std::string>() == "evt");

  log->clear();
  live.close();
  CHECK(names(only(*log, "close")) == Log{"e", "d", "c", "b", "a"});
  CHECK(names(only(*log, "inactive")) == five_in);
  CHECK(names(only(*log, "unregistered")) == five_in);
  // inactive before unregistered, then the handlers are removed tail first.
  CHECK(log->back() == "a:removed");
  CHECK(live.pipeline().empty());
}

TEST_CASE("a handler can remove itself while handling a read and the read continues") {
  auto log = std::make_shared<Log>();
  auto remover = on_read([](ChannelHandlerContext& ctx, Message msg) {
    ctx.pipeline().remove(ctx.name());
    CHECK(ctx.is_removed());
    ctx.fire_channel_read(std::move(msg));  // still forwards to the handler after it
  });
  EmbeddedChannel ch{std::make_shared<Recorder>("a", log), remover,
                     std::make_shared<Recorder>("c", log)};
  ch.pipeline();
  log->clear();
  CHECK(ch.write_inbound(1, 2));
  CHECK(only(*log, "read") == Log{"a:read", "c:read", "a:read", "c:read"});
  CHECK(ch.pipeline().size() == 2);
  CHECK(ch.read_inbound<int>() == 1);
  CHECK(ch.read_inbound<int>() == 2);
  CHECK_FALSE(ch.finish());
}

TEST_CASE("a handler removing the next handler mid-read skips it for that read") {
  auto log = std::make_shared<Log>();
  auto remover = on_read([](ChannelHandlerContext& ctx, Message msg) {
    if (ctx.pipeline().get("c")) ctx.pipeline().remove("c");
    ctx.fire_channel_read(std::move(msg));
  });
  EmbeddedChannel ch;
  ch.pipeline()
      .add_last("b", remover)
      .add_last("c", std::make_shared<Recorder>("c", log))
      .add_last("d", std::make_shared<Recorder>("d", log));
  log->clear();
  ch.write_inbound(1);
  CHECK(only(*log, "read") == Log{"d:read"});
  CHECK(ch.pipeline().names() == std::vector<std::string>{"b", "d"});
}

TEST_CASE("replacing a handler mid-read sends the read on through the new handler") {
  auto log = std::make_shared<Log>();
  auto replacer = on_read([log](ChannelHandlerContext& ctx, Message msg) {
    ctx.pipeline().replace(ctx.name(), "new", std::make_shared<Recorder>("new", log));
    ctx.fire_channel_read(std::move(msg));
  });
  EmbeddedChannel ch;
  ch.pipeline().add_last("old", replacer).add_last("z", std::make_shared<Recorder>("z", log));
  ch.write_inbound(7);
  CHECK(only(*log, "read") == Log{"new:read", "z:read"});
  CHECK(ch.pipeline().names() == std::vector<std::string>{"new", "z"});
  CHECK(ch.read_inbound<int>() == 7);
}

TEST_CASE("an exception thrown by a handler reaches exception_caught of the next handler") {
  auto log = std::make_shared<Log>();
  auto thrower =
      on_read([](ChannelHandlerContext&, Message) -> void { throw std::runtime_error("boom"); });
  std::exception_ptr seen;
  class Catcher : public ChannelInboundHandler {
   public:
    explicit Catcher(std::exception_ptr* out) : out_(out) {}
    void exception_caught(ChannelHandlerContext&, std::exception_ptr e) override { *out_ = e; }

   private:
    std::exception_ptr* out_;
  };
  EmbeddedChannel ch{std::make_shared<Recorder>("a", log), thrower,
                     std::make_shared<Catcher>(&seen)};
  CHECK_FALSE(ch.write_inbound(1));
  REQUIRE(seen);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(seen), "boom", std::runtime_error);
  CHECK(only(*log, "exception").empty());  // handlers before the thrower do not see it
  CHECK(ch.exceptions().empty());          // consumed: never reached the tail
}

TEST_CASE("an unhandled exception reaches the tail, check_exception and exceptions()") {
  int n = 0;
  auto thrower = on_read([&n](ChannelHandlerContext&, Message) -> void {
    throw std::runtime_error("boom " + std::to_string(++n));
  });
  EmbeddedChannel ch{thrower};
  CHECK_THROWS_WITH(ch.write_inbound(1, 2), "boom 1");
  REQUIRE(ch.exceptions().size() == 2);
  CHECK_THROWS_WITH(std::rethrow_exception(ch.exceptions()[1]), "boom 2");
  CHECK_NOTHROW(ch.check_exception());  // already reported
  CHECK_FALSE(ch.finish());
}

TEST_CASE("a failing write fails its promise, or fires exception_caught without one") {
  class BadEncoder : public ChannelOutboundHandler {
   public:
    void write(ChannelHandlerContext&, Message, ChannelPromise) override {
      throw std::runtime_error("cannot encode");
    }
  };
  EmbeddedChannel ch{std::make_shared<BadEncoder>()};
  auto promise = ch.new_promise();
  ch.write(1, promise);
  CHECK(promise.is_done());
  CHECK_FALSE(promise.is_success());
  CHECK_THROWS_WITH(std::rethrow_exception(promise.cause()), "cannot encode");
  CHECK(ch.exceptions().empty());
  CHECK_THROWS_WITH(ch.write_outbound(2), "cannot encode");
}

TEST_CASE("a non-sharable handler cannot join two pipelines; a sharable one can") {
  auto h = std::make_shared<ChannelInboundHandler>();
  EmbeddedChannel a{h};
  EmbeddedChannel b;
  CHECK_THROWS_AS(b.pipeline().add_last("h", h), ChannelPipelineError);
  try {
    b.pipeline().add_last("h", h);
  } catch (const ChannelPipelineError& e) {
    CHECK(std::string(e.what()).find("not sharable") != std::string::npos);
  }
  CHECK(b.pipeline().empty());
  CHECK_THROWS_AS(a.pipeline().add_last("again", h), ChannelPipelineError);
  // Once removed it may go elsewhere.
  a.pipeline().remove(*h);
  CHECK_NOTHROW(b.pipeline().add_last("h", h));

  auto shared = std::make_shared<Sharable>();
  EmbeddedChannel c{shared, shared};
  EmbeddedChannel d{shared};
  CHECK(c.pipeline().size() == 2);
  CHECK(d.pipeline().size() == 1);
}

TEST_CASE("pipelines are edited by name") {
  EmbeddedChannel ch;
  auto& p = ch.pipeline();
  auto h = [] { return std::make_shared<ChannelDuplexHandler>(); };
  p.add_last("b", h()).add_first("a", h()).add_last("d", h());
  p.add_before("d", "c", h()).add_after("d", "e", h());
  CHECK(p.names() == std::vector<std::string>{"a", "b", "c", "d", "e"});
  CHECK_THROWS_AS(p.add_last("c", h()), ChannelPipelineError);
  CHECK_THROWS_AS(p.add_last("tail", h()), ChannelPipelineError);
  CHECK_THROWS_AS(p.add_before("nope", "x", h()), ChannelPipelineError);
  CHECK_THROWS_AS(p.remove("nope"), ChannelPipelineError);
  CHECK(p.get("nope") == nullptr);
  CHECK(p.context("nope") == nullptr);

  auto c = p.get("c");
  REQUIRE(c);
  CHECK(p.context("c")->name() == "c");
  CHECK(&p.context(*c)->handler() == c.get());
  CHECK(p.get<ChannelOutboundHandler>("c") != nullptr);
  CHECK(p.first() == p.get("a"));
  CHECK(p.last() == p.get("e"));

  CHECK(p.remove("c") == c);
  CHECK(p.remove_first() != nullptr);
  CHECK(p.remove_last() != nullptr);
  CHECK(p.names() == std::vector<std::string>{"b", "d"});
  auto old = p.replace("b", "b2", h());
  CHECK(old != nullptr);
  CHECK(p.names() == std::vector<std::string>{"b2", "d"});
  p.add_last(h());
  p.add_last(h());
  CHECK(p.names() == std::vector<std::string>{"b2", "d", "handler#0", "handler#1"});
  CHECK(p.size() == 4);
}

TEST_CASE("handler_added and handler_removed run as handlers come and go") {
  auto log = std::make_shared<Log>();
  EmbeddedChannel ch;
  ch.pipeline().add_last("r", std::make_shared<Recorder>("r", log));
  CHECK(*log == Log{"r:added"});
  ch.pipeline().replace("r", "s", std::make_shared<Recorder>("s", log));
  CHECK(*log == Log{"r:added", "s:added", "r:removed"});
  ch.pipeline().remove("s");
  CHECK(log->back() == "s:removed");
}

TEST_CASE("a handler whose handler_added throws is removed and the error fired") {
  class Bad : public ChannelInboundHandler {
    void handler_added(ChannelHandlerContext&) override { throw std::runtime_error("no"); }
  };
  EmbeddedChannel ch;
  ch.pipeline().add_last("bad", std::make_shared<Bad>());
  CHECK(ch.pipeline().empty());
  CHECK_THROWS_AS(ch.check_exception(), ChannelPipelineError);
}

TEST_CASE("the read path allocates nothing per message in steady state") {
  auto pass = [] { return std::make_shared<ChannelInboundHandler>(); };
  EmbeddedChannel ch{pass(), pass(), pass(), pass()};
  trellis::testing::BufferLeakCheck leaks;
  auto buf = ByteBufAllocator::default_allocator().buffer(64);
  buf.write_string("payload");
  // Warm up: the inbound queue grows to its working size once.
  for (int i = 0; i < 16; ++i) {
    ch.pipeline().fire_channel_read(std::move(buf));
    buf = ch.inbound_messages().take_front().take<ByteBuf>();
  }
  AllocationScope scope;
  for (int i = 0; i < 10'000; ++i) {
    ch.pipeline().fire_channel_read(std::move(buf));
    buf = ch.inbound_messages().take_front().take<ByteBuf>();
  }
  CHECK(scope.count() == 0);
  AllocationScope scope2;
  for (int i = 0; i < 1'000; ++i) {
    ch.write_inbound(std::move(buf));
    buf = *ch.read_inbound<ByteBuf>();
  }
  CHECK(scope2.count() == 0);
  CHECK(buf.to_string() == "payload");
  buf = ByteBuf();
  TRELLIS_CHECK_NO_LEAKED_BUFFERS(leaks);
}

TEST_CASE("the write path allocates nothing per message in steady state") {
  auto pass = [] { return std::make_shared<ChannelDuplexHandler>(); };
  EmbeddedChannel ch{pass(), pass(), pass(), pass()};
  auto buf = ByteBuf::from("payload");
  for (int i = 0; i < 16; ++i) {
    ch.write_outbound(std::move(buf));
    buf = *ch.read_outbound<ByteBuf>();
  }
  AllocationScope scope;
  for (int i = 0; i < 1'000; ++i) {
    ch.write_outbound(std::move(buf));
    buf = *ch.read_outbound<ByteBuf>();
  }
  CHECK(scope.count() == 0);
}

TEST_CASE("channel attributes are typed by their key") {
  static const AttributeKey<std::string> kUser{"user"};
  static const AttributeKey<int> kCount{"count"};
  EmbeddedChannel ch;
  CHECK(ch.attr(kUser) == nullptr);
  ch.set_attr(kUser, "ann");
  ch.set_attr(kCount, 3);
  REQUIRE(ch.attr(kUser) != nullptr);
  CHECK(*ch.attr(kUser) == "ann");
  ++*ch.attr(kCount);
  CHECK(*ch.attr(kCount) == 4);
  CHECK(ch.attributes().get_or_set(kCount, 9) == 4);
  CHECK(ch.attributes().remove(kCount));
  CHECK_FALSE(ch.attributes().has(kCount));
  CHECK(ch.attributes().get_or_set(kCount, 9) == 9);
}

TEST_CASE("channel ids are unique and have short and long forms") {
  EmbeddedChannel a;
  EmbeddedChannel b;
  CHECK(a.id() != b.id());
  CHECK(a.id().as_short_text().size() == 8);
  CHECK(a.id().as_long_text() != b.id().as_long_text());
}

TEST_CASE("socket addresses parse and print") {
  auto v4 = SocketAddress::from_ip("127.0.0.1", 8080);
  CHECK(v4.kind() == SocketAddress::Kind::kIpv4);
  CHECK(v4.to_string() == "127.0.0.1:8080");
  CHECK(v4.port() == 8080);
  auto v6 = SocketAddress::from_ip("[::1]", 80);
  CHECK(v6.to_string() == "[::1]:80");
  CHECK(SocketAddress::from_sockaddr(v6.sockaddr_ptr(), v6.length()) == v6);
  CHECK(SocketAddress::from_unix_path("/tmp/s").to_string() == "unix:/tmp/s");
  CHECK_THROWS_AS(SocketAddress::from_ip("localhost", 1), InvalidArgumentError);
  EmbeddedChannel ch;
  CHECK(ch.local_address()->to_string() == "embedded:embedded");
}
