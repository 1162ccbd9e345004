// Tests of ChannelGroup on EmbeddedChannels: membership, leaving on close, broadcasts that share
// one buffer, matchers, group futures that collect the failures of their channels, and the chat
// example of docs/pipeline.md.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <trellis/pipeline/channel_group.hpp>
#include <trellis/pipeline/unpooled_byte_buf_allocator.hpp>
#include <trellis/testing/doctest_helpers.hpp>
#include <trellis/testing/embedded_channel.hpp>

#include "examples/chat_broadcast.hpp"

using namespace trellis;
using trellis::testing::read_outbound_string;

namespace {

// Adds its channel to a group when the channel becomes active (Netty's channelActive idiom).
class JoinGroup final : public ChannelInboundHandler {
 public:
  explicit JoinGroup(ChannelGroup& group) : group_(group) {}
  bool is_sharable() const noexcept override { return true; }
  void channel_active(ChannelHandlerContext& ctx) override {
    group_.add(ctx.channel());
    ctx.fire_channel_active();
  }

 private:
  ChannelGroup& group_;
};

// Fails every write and close with an IoError instead of passing it on.
class RefuseOutbound final : public ChannelOutboundHandler {
 public:
  void write(ChannelHandlerContext&, Message, ChannelPromise promise) override {
    promise.try_set_exception(IoError(std::make_error_code(std::errc::broken_pipe), "write"));
  }
  void close(ChannelHandlerContext&, ChannelPromise promise) override {
    promise.try_set_exception(IoError(std::make_error_code(std::errc::io_error), "close"));
  }
};

ByteBuf bytes_from(ByteBufAllocator& alloc, std::string_view text) {
  ByteBuf buf = alloc.buffer(text.size());
  buf.write_bytes(std::as_bytes(std::span(text.data(), text.size())));
  return buf;
}

const ChannelGroupError& group_error_of(const Future<void>& f) {
  static thread_local std::exception_ptr kept;
  kept = f.cause();
  REQUIRE(kept);
  try {
    std::rethrow_exception(kept);
  } catch (const ChannelGroupError& e) {
    return e;
  } catch (...) {
  }
  FAIL("the group future did not fail with a ChannelGroupError");
  throw;
}

}  // namespace

TEST_CASE("ChannelGroup: add, find, contains, remove and size") {
  ChannelGroup group("members");
  auto a = EmbeddedChannel::create();
  auto b = EmbeddedChannel::create();
  CHECK(group.empty());
  CHECK(group.add(*a));
  CHECK(group.add(b));
  CHECK_FALSE(group.add(*a));  // already a member
  CHECK(group.size() == 2);
  CHECK(group.find(a->id()) == a);
  CHECK(group.contains(*b));
  CHECK(group.channels().size() == 2);
  CHECK(group.remove(*a));
  CHECK_FALSE(group.remove(a->id()));
  CHECK(group.find(a->id()) == nullptr);
  CHECK_FALSE(group.contains(*a));
  CHECK(group.size() == 1);
}

TEST_CASE("ChannelGroup: a channel without a shared owner is refused") {
  ChannelGroup group;
  EmbeddedChannel on_stack;
  CHECK(on_stack.shared_owner() == nullptr);
  CHECK_THROWS_AS(static_cast<Channel&>(on_stack).shared_from_this(), IllegalStateError);
  CHECK_THROWS_AS(group.add(on_stack), InvalidArgumentError);
  CHECK_THROWS_AS(group.add(std::shared_ptr<Channel>()), InvalidArgumentError);
  CHECK(group.empty());

  auto shared = EmbeddedChannel::create();
  Channel& as_channel = *shared;
  CHECK(as_channel.shared_from_this() == shared);
  CHECK(shared->shared_from_this() == shared);
}

TEST_CASE("ChannelGroup: a handler adds its channel in channel_active") {
  ChannelGroup group;
  auto join = std::make_shared<JoinGroup>(group);
  auto a = EmbeddedChannel::create(join);
  auto b = EmbeddedChannel::create(join);
  CHECK(group.size() == 2);
  CHECK(group.contains(*a));
  CHECK(group.contains(*b));
}

TEST_CASE("ChannelGroup: a channel leaves the group when it closes or is destroyed") {
  ChannelGroup group;
  auto a = EmbeddedChannel::create();
  auto b = EmbeddedChannel::create();
  group.add(*a);
  group.add(*b);
  a->close();
  CHECK(group.size() == 1);
  CHECK_FALSE(group.contains(*a));
  CHECK(group.contains(*b));

  // Added after it closed: the close future's listener takes it out again at once.
  CHECK(group.add(*a));
  CHECK(group.size() == 1);

  // Destroyed while open: it closes in its destructor and leaves.
  b.reset();
  CHECK(group.empty());
}

TEST_CASE("ChannelGroup: destroying the group leaves its channels open") {
  auto a = EmbeddedChannel::create();
  auto group = std::make_unique<ChannelGroup>();
  group->add(*a);
  group.reset();
  CHECK(a->is_open());
  a->close();  // its close listener finds the group gone
  CHECK_FALSE(a->is_open());
}

TEST_CASE("ChannelGroup: write_and_flush hands every channel the same bytes, not a copy") {
  UnpooledByteBufAllocator alloc;
  ChannelGroup group;
  auto a = EmbeddedChannel::create();
  auto b = EmbeddedChannel::create();
  auto c = EmbeddedChannel::create();
  group.add(*a);
  group.add(*b);
  group.add(*c);

  ByteBuf buf = bytes_from(alloc, "hello, everyone");
  const std::byte* bytes = buf.readable_span().data();
  REQUIRE(alloc.stats().total_buffers == 1);

  auto f = group.write_and_flush(Message(std::move(buf)));
  REQUIRE(f.is_done());
  CHECK(f.is_success());
  // One storage for three channels: nothing was allocated or copied.
  CHECK(alloc.stats().total_buffers == 1);
  CHECK(alloc.stats().live_buffers == 1);

  std::vector<ByteBuf> received;
  for (auto* ch : {a.get(), b.get(), c.get()}) {
    auto out = ch->read_outbound<ByteBuf>();
    REQUIRE(out);
    CHECK(out->to_string() == "hello, everyone");
    CHECK(out->readable_span().data() == bytes);
    CHECK_FALSE(ch->read_outbound());
    received.push_back(std::move(*out));
  }
  CHECK(received.front().ref_count() == 3);
  received.pop_back();
  CHECK(received.front().ref_count() == 2);
  received.clear();
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("ChannelGroup: other messages are copied per channel; uncopyable ones are refused") {
  ChannelGroup group;
  auto a = EmbeddedChannel::create();
  auto b = EmbeddedChannel::create();
  group.add(*a);
  group.add(*b);

  auto f = group.write_and_flush(Message(std::string("a string")));
  CHECK(f.is_success());
  CHECK(a->read_outbound<std::string>() == "a string");
  CHECK(b->read_outbound<std::string>() == "a string");

  CHECK_THROWS_AS(group.write_and_flush(Message(std::make_unique<int>(7))), WrongTypeError);
  CHECK_FALSE(a->read_outbound());
  CHECK_FALSE(b->read_outbound());
}

TEST_CASE("ChannelGroup: write then flush, and a matcher picks the channels") {
  ChannelGroup group;
  auto sender = EmbeddedChannel::create();
  auto other = EmbeddedChannel::create();
  group.add(*sender);
  group.add(*other);

  auto f = group.write(Message(ByteBuf::from("not yet")), channel_matchers::is_not(*sender));
  CHECK_FALSE(other->read_outbound());  // written, not flushed
  CHECK_FALSE(f.is_done());
  group.flush();
  CHECK(f.is_success());
  CHECK(read_outbound_string(*other) == "not yet");
  CHECK_FALSE(sender->read_outbound());

  CHECK(group.write_and_flush(Message(ByteBuf::from("me")), channel_matchers::is(*sender))
            .is_success());
  CHECK(read_outbound_string(*sender) == "me");
  CHECK_FALSE(other->read_outbound());

  // No channel matched: done at once.
  CHECK(group.write_and_flush(Message(ByteBuf::from("x")), channel_matchers::is_child())
            .is_success());
  CHECK_FALSE(sender->read_outbound());
  CHECK_FALSE(other->read_outbound());
}

TEST_CASE("ChannelGroup: a failed write fails the group future with every failed channel") {
  ChannelGroup group("chat");
  auto good = EmbeddedChannel::create();
  auto bad = EmbeddedChannel::create(std::make_shared<RefuseOutbound>());
  group.add(*good);
  group.add(*bad);

  auto f = group.write_and_flush(Message(ByteBuf::from("hi")));
  REQUIRE(f.is_done());
  CHECK_FALSE(f.is_success());
  const auto& error = group_error_of(f);
  CHECK(error.attempted() == 2);
  REQUIRE(error.failures().size() == 1);
  CHECK(error.failures().front().channel == bad->id());
  CHECK(error.error_of(bad->id()) != nullptr);
  CHECK(error.error_of(good->id()) == nullptr);
  CHECK(std::string(error.what()).find("chat: write_and_flush failed on 1 of 2 channels") == 0);
  CHECK(read_outbound_string(*good) == "hi");
  // RefuseOutbound refuses the close too: take it out so that the channel can close (a close
  // future that never completes keeps its listeners).
  bad->pipeline().remove_all();
  bad->close();
  CHECK(bad->close_future().is_done());
}

TEST_CASE("ChannelGroup: close() closes every channel; the future collects the failures") {
  ChannelGroup group("shutdown");
  auto a = EmbeddedChannel::create();
  auto b = EmbeddedChannel::create();
  auto refusing = EmbeddedChannel::create(std::make_shared<RefuseOutbound>());
  group.add(*a);
  group.add(*b);
  group.add(*refusing);

  auto all_closed = group.close_future(channel_matchers::is_not(*refusing));
  CHECK_FALSE(all_closed.is_done());

  auto f = group.close();
  REQUIRE(f.is_done());
  CHECK_FALSE(a->is_open());
  CHECK_FALSE(b->is_open());
  CHECK(refusing->is_open());
  CHECK(all_closed.is_success());
  const auto& error = group_error_of(f);
  CHECK(error.attempted() == 3);
  REQUIRE(error.failures().size() == 1);
  CHECK(error.failures().front().channel == refusing->id());
  // The closed ones left; the one that refused is still a member.
  CHECK(group.size() == 1);
  CHECK(group.contains(*refusing));

  // An empty selection completes at once.
  CHECK(ChannelGroup().close().is_success());
  // Let the refusing channel close, so its close future (and the group's listener) completes.
  refusing->pipeline().remove_all();
  refusing->close();
  CHECK(refusing->close_future().is_done());
  CHECK(group.empty());
}

TEST_CASE("docs/pipeline.md: the chat handler broadcasts to everyone but the sender") {
  auto handler = std::make_shared<chat::ChatHandler>();
  auto alice = EmbeddedChannel::create(handler);
  auto bob = EmbeddedChannel::create(handler);
  auto carol = EmbeddedChannel::create(handler);
  CHECK(handler->online() == 3);

  alice->write_inbound(ByteBuf::from("hello\n"));
  CHECK(read_outbound_string(*bob) == "hello\n");
  CHECK(read_outbound_string(*carol) == "hello\n");
  CHECK_FALSE(alice->read_outbound());

  bob->close();
  CHECK(handler->online() == 2);
  auto closed = handler->close_all();
  CHECK(closed.is_success());
  CHECK_FALSE(alice->is_open());
  CHECK_FALSE(carol->is_open());
  CHECK(handler->online() == 0);
}

namespace {

// A member whose peer never reads: nothing leaves its outbound buffer, and it turns unwritable
// above 64 bytes queued.
std::shared_ptr<EmbeddedChannel> stalled_member() {
  auto ch = EmbeddedChannel::create();
  ch->config().set_write_buffer_water_mark(32, 64);
  ch->set_outbound_byte_budget(0);
  return ch;
}

std::size_t backlog_of(EmbeddedChannel& ch) {
  return ch.unsafe().outbound_buffer()->total_pending_write_bytes();
}

bool unwritable_error(const ChannelGroupError& error, const ChannelId& id, bool closed) {
  try {
    std::rethrow_exception(error.error_of(id));
  } catch (const UnwritableChannelError& e) {
    return e.closed() == closed;
  } catch (...) {
    return false;
  }
}

}  // namespace

TEST_CASE("ChannelGroup: by default a member that never reads is written to without bound") {
  ChannelGroup group("room");
  CHECK(group.unwritable_policy() == ChannelGroup::UnwritablePolicy::kWrite);
  auto stalled = stalled_member();
  group.add(*stalled);
  for (int i = 0; i < 100; ++i) group.write_and_flush(Message(ByteBuf::from("0123456789")));
  CHECK(backlog_of(*stalled) == 1000);
  CHECK(stalled->is_open());
}

TEST_CASE("ChannelGroup kSkip: an unwritable member is skipped, the others get every message") {
  ChannelGroup group("room");
  group.set_unwritable_policy(ChannelGroup::UnwritablePolicy::kSkip);
  CHECK(group.unwritable_policy() == ChannelGroup::UnwritablePolicy::kSkip);
  auto stalled = stalled_member();
  auto reader = EmbeddedChannel::create();
  group.add(*stalled);
  group.add(*reader);
  int delivered = 0;
  Future<void> last;
  for (int i = 0; i < 100; ++i) {
    last = group.write_and_flush(Message(ByteBuf::from("0123456789")));
    if (read_outbound_string(*reader) == "0123456789") ++delivered;
  }
  CHECK(delivered == 100);
  // Written until it turned unwritable (above 64 bytes: 7 messages), skipped after that.
  CHECK(backlog_of(*stalled) == 70);
  CHECK(stalled->is_open());
  REQUIRE(last.is_done());
  const auto& error = group_error_of(last);
  REQUIRE(error.failures().size() == 1);
  CHECK(unwritable_error(error, stalled->id(), false));

  // Once its peer reads again it is writable, and written to again.
  stalled->set_outbound_byte_budget(std::nullopt);
  stalled->outbound_messages().clear();
  CHECK(stalled->is_writable());
  CHECK(group.write_and_flush(Message(ByteBuf::from("again"))).is_success());
  CHECK(read_outbound_string(*stalled) == "again");
  CHECK(read_outbound_string(*reader) == "again");
}

TEST_CASE("ChannelGroup kCloseAbove: a member is closed once its backlog passes the bound") {
  ChannelGroup group("room");
  group.set_unwritable_policy(ChannelGroup::UnwritablePolicy::kCloseAbove, 200);
  CHECK(group.unwritable_policy() == ChannelGroup::UnwritablePolicy::kCloseAbove);
  CHECK(group.max_backlog_bytes() == 200);
  auto stalled = stalled_member();
  auto reader = EmbeddedChannel::create();
  group.add(*stalled);
  group.add(*reader);
  int delivered = 0;
  std::size_t most_queued = 0;
  std::vector<Future<void>> writes;
  for (int i = 0; i < 100; ++i) {
    writes.push_back(group.write_and_flush(Message(ByteBuf::from("0123456789"))));
    if (read_outbound_string(*reader) == "0123456789") ++delivered;
    if (stalled->is_open()) most_queued = std::max(most_queued, backlog_of(*stalled));
  }
  CHECK(delivered == 100);
  CHECK(most_queued == 200);  // written while within the bound, though unwritable above 64
  CHECK_FALSE(stalled->is_open());
  CHECK_FALSE(group.contains(*stalled));
  CHECK(group.size() == 1);
  // The 20 messages queued for it were dropped by the close.
  for (std::size_t i = 0; i < 20; ++i) {
    REQUIRE(writes[i].is_done());
    CHECK_THROWS_AS(std::rethrow_exception(group_error_of(writes[i]).error_of(stalled->id())),
                    ClosedChannelError);
  }
  // The 21st message took the backlog to 210: the member was closed for it.
  REQUIRE(writes[20].is_done());
  CHECK(unwritable_error(group_error_of(writes[20]), stalled->id(), true));
  CHECK(writes.back().is_success());  // no longer a member
}

TEST_CASE("ChannelGroup kCloseAbove needs a bound") {
  ChannelGroup group("room");
  CHECK_THROWS_AS(group.set_unwritable_policy(ChannelGroup::UnwritablePolicy::kCloseAbove),
                  InvalidArgumentError);
  CHECK(group.unwritable_policy() == ChannelGroup::UnwritablePolicy::kWrite);
}

TEST_CASE("docs/pipeline.md shows the chat example as compiled here") {
  const auto here = std::filesystem::path(__FILE__).parent_path();
  const auto example_path = here / "examples" / "chat_broadcast.hpp";
  const auto doc_path = here / ".." / ".." / "docs" / "pipeline.md";
  if (!std::filesystem::exists(example_path) || !std::filesystem::exists(doc_path)) return;
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string example = slurp(example_path);
  CHECK_FALSE(example.empty());
  CHECK(slurp(doc_path).find(example) != std::string::npos);
}
