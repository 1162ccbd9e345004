// Tests of ChannelOutboundBuffer through EmbeddedChannel: flush semantics, promise order, water
// marks and writability events, failure on close, gathering writes and partial writes.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/testing/doctest_helpers.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;

namespace {

// Records channel.is_writable() at each writability change.
class WritabilityLog : public ChannelInboundHandler {
 public:
  void channel_writability_changed(ChannelHandlerContext& ctx) override {
    changes.push_back(ctx.channel().is_writable());
    ctx.fire_channel_writability_changed();
  }
  std::vector<bool> changes;
};

ByteBuf bytes(std::size_t n) {
  auto buf = ByteBufAllocator::default_allocator().buffer(n);
  for (std::size_t i = 0; i < n; ++i) buf.write_u8(static_cast<std::uint8_t>('a' + i % 26));
  return buf;
}

}  // namespace

TEST_CASE("writes wait in the outbound buffer until flush") {
  EmbeddedChannel ch;
  ch.write(ByteBuf::from("one"));
  ch.write(ByteBuf::from("two"));
  auto* out = ch.unsafe().outbound_buffer();
  REQUIRE(out != nullptr);
  CHECK(out->unflushed_size() == 2);
  CHECK(out->size() == 0);
  CHECK(out->total_pending_write_bytes() == 6);
  CHECK(ch.outbound_messages().empty());
  ch.flush();
  CHECK(out->total_pending_write_bytes() == 0);
  TRELLIS_CHECK_OUTBOUND_STRING(ch, "one");
  TRELLIS_CHECK_OUTBOUND_STRING(ch, "two");
  TRELLIS_CHECK_NO_MORE_OUTBOUND(ch);
}

TEST_CASE("write promises complete in write order") {
  EmbeddedChannel ch;
  ch.set_outbound_byte_budget(0);
  std::vector<int> order;
  std::vector<ChannelPromise> promises;
  for (int i = 0; i < 3; ++i) {
    promises.push_back(ch.new_promise());
    promises.back().future().add_listener([&order, i](const Future<void>&) { order.push_back(i); });
    ch.write(ByteBuf::from("x"), promises.back());
  }
  ch.flush();
  CHECK(order.empty());
  ch.add_outbound_byte_budget(3);
  CHECK(order == std::vector<int>{0, 1, 2});
  for (auto& p : promises) CHECK(p.is_success());
  CHECK(ch.finish_and_release_all());
}

TEST_CASE("writability changes exactly at the water marks") {
  auto log = std::make_shared<WritabilityLog>();
  EmbeddedChannel ch{log};
  CHECK(ch.config().write_buffer_high_water_mark() == 64 * 1024);  // Netty's defaults
  CHECK(ch.config().write_buffer_low_water_mark() == 32 * 1024);
  ch.set_outbound_byte_budget(0);  // the peer reads nothing yet

  for (int i = 0; i < 64; ++i) ch.write(bytes(1024));  // exactly at the high mark
  CHECK(ch.is_writable());
  CHECK(log->changes.empty());
  CHECK(ch.bytes_before_unwritable() == 0);
  ch.write(bytes(1024));  // above it: unwritable, even before a flush
  CHECK_FALSE(ch.is_writable());
  CHECK(log->changes == std::vector<bool>{false});
  CHECK(ch.bytes_before_writable() == 65 * 1024 - 32 * 1024);
  ch.flush();

  ch.add_outbound_byte_budget(33 * 1024);  // 32 KiB left: not below the low mark
  CHECK(ch.unsafe().outbound_buffer()->total_pending_write_bytes() == 32 * 1024);
  CHECK_FALSE(ch.is_writable());
  ch.add_outbound_byte_budget(512);  // a partial write counts once its message is done
  CHECK_FALSE(ch.is_writable());
  ch.add_outbound_byte_budget(512);  // 31 KiB left: writable again
  CHECK(ch.is_writable());
  CHECK(log->changes == std::vector<bool>{false, true});
  ch.set_outbound_byte_budget(std::nullopt);
  CHECK(ch.outbound_messages().size() == 66);  // 65 buffers, one of them in two parts
  CHECK(ch.finish_and_release_all());
}

TEST_CASE("water marks are configurable and validated") {
  EmbeddedChannel ch;
  ch.config().set_write_buffer_water_mark(10, 20);
  ch.set_outbound_byte_budget(0);
  ch.write(bytes(21));
  CHECK_FALSE(ch.is_writable());
  CHECK_THROWS_AS(ch.config().set_write_buffer_water_mark(30, 20), InvalidArgumentError);
  CHECK(ch.finish_and_release_all() == false);
}

TEST_CASE("set_writable(false) simulates a peer that stops reading") {
  auto log = std::make_shared<WritabilityLog>();
  EmbeddedChannel ch{log};
  ch.set_writable(false);
  CHECK_FALSE(ch.is_writable());
  CHECK(log->changes == std::vector<bool>{false});
  CHECK_FALSE(ch.write_outbound(ByteBuf::from("held")));
  CHECK(ch.unsafe().outbound_buffer()->size() == 1);
  ch.set_writable(true);
  CHECK(ch.is_writable());
  CHECK(log->changes == std::vector<bool>{false, true});
  TRELLIS_CHECK_OUTBOUND_STRING(ch, "held");
}

TEST_CASE("closing fails every queued write with ClosedChannelError, in order") {
  EmbeddedChannel ch;
  ch.set_outbound_byte_budget(0);
  std::vector<int> order;
  auto flushed = ch.new_promise();
  auto unflushed = ch.new_promise();
  flushed.future().add_listener([&](const Future<void>&) { order.push_back(1); });
  unflushed.future().add_listener([&](const Future<void>&) { order.push_back(2); });
  ch.write_and_flush(ByteBuf::from("a"), flushed);
  ch.write(ByteBuf::from("b"), unflushed);
  ch.close();
  CHECK(order == std::vector<int>{1, 2});
  CHECK_THROWS_AS(std::rethrow_exception(flushed.cause()), ClosedChannelError);
  CHECK_THROWS_AS(std::rethrow_exception(unflushed.cause()), ClosedChannelError);
  CHECK(ch.unsafe().outbound_buffer() == nullptr);
  CHECK_FALSE(ch.is_writable());

  auto late = ch.new_promise();
  ch.write(ByteBuf::from("c"), late);
  CHECK_THROWS_AS(std::rethrow_exception(late.cause()), ClosedChannelError);
  CHECK_THROWS_AS(ch.write_outbound(ByteBuf::from("d")), ClosedChannelError);
}

TEST_CASE("to_iovecs gathers flushed buffers and remove_bytes handles partial writes") {
  trellis::testing::BufferLeakCheck leaks;
  {
    EmbeddedChannel ch;
    ch.set_outbound_byte_budget(0);
    CompositeByteBuf composite;
    composite.add_component(ByteBuf::from("cd"));
    composite.add_component(ByteBuf::from("ef"));
    ch.write(ByteBuf::from("ab"));
    ch.write(std::move(composite));
    ch.write(ByteBuf::from("gh"));
    ch.write(std::string("not bytes"));
    ch.flush();
    auto* out = ch.unsafe().outbound_buffer();
    CHECK(out->total_pending_write_bytes() == 8 + ChannelOutboundBuffer::kUnknownMessageSize);

    struct iovec iov[8];
    std::size_t total = 0;
    CHECK(out->to_iovecs(iov, 1 << 20, &total) == 4);
    CHECK(total == 8);
    std::string joined;
    for (int i = 0; i < 4; ++i) joined.append(static_cast<char*>(iov[i].iov_base), iov[i].iov_len);
    CHECK(joined == "abcdefgh");
    CHECK(out->to_iovecs(iov, 3, &total) == 1);  // max_bytes stops before the composite
    CHECK(total == 2);

    out->remove_bytes(3);  // "ab" done, one byte of the composite
    CHECK(out->size() == 3);
    CHECK(out->current()->get<CompositeByteBuf>().to_string() == "def");
    out->remove_bytes(5);  // the rest of the composite and "gh"
    CHECK(out->size() == 1);
    CHECK(out->current()->is<std::string>());
    CHECK(out->remove());
    CHECK(out->is_empty());
    CHECK(out->total_pending_write_bytes() == 0);
  }
  TRELLIS_CHECK_NO_LEAKED_BUFFERS(leaks);
}

TEST_CASE("an outbound byte budget splits a buffer like a partial socket write") {
  EmbeddedChannel ch;
  ch.set_outbound_byte_budget(3);
  ch.write_outbound(ByteBuf::from("hello"));
  TRELLIS_CHECK_OUTBOUND_STRING(ch, "hel");
  TRELLIS_CHECK_NO_MORE_OUTBOUND(ch);
  CHECK(ch.outbound_byte_budget() == 0u);
  ch.add_outbound_byte_budget(10);
  TRELLIS_CHECK_OUTBOUND_STRING(ch, "lo");
  CHECK(ch.outbound_byte_budget() == 8u);
  ch.set_outbound_byte_budget(std::nullopt);
  ch.write_outbound(ByteBuf::from("unlimited"));
  TRELLIS_CHECK_OUTBOUND_STRING(ch, "unlimited");
}
