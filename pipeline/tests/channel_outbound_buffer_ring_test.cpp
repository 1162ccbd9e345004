// ChannelOutboundBuffer memory: a single queued message needs no heap ring, more than one take
// one, and the ring is given back when the queue drains (so an idle channel holds none), with
// write order kept across the inline slot and the ring.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <sys/uio.h>

#include <trellis/pipeline/channel.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/doctest_helpers.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;

namespace {

std::string gathered(ChannelOutboundBuffer& out) {
  struct iovec iov[16];
  const std::size_t n = out.to_iovecs(iov, 1 << 20);
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s.append(static_cast<char*>(iov[i].iov_base), iov[i].iov_len);
  return s;
}

}  // namespace

TEST_CASE("one queued write at a time takes no ring; more take one until the queue drains") {
  EmbeddedChannel ch;
  ch.set_outbound_byte_budget(0);  // the peer reads nothing yet
  auto* out = ch.unsafe().outbound_buffer();
  REQUIRE(out != nullptr);
  CHECK(out->ring_capacity() == 0);

  // Request/response: one write per flush lives in the buffer itself.
  for (int i = 0; i < 3; ++i) {
    ch.write_and_flush(ByteBuf::from("a"));
    CHECK(out->size() == 1);
    CHECK(out->ring_capacity() == 0);
    ch.add_outbound_byte_budget(1);
    CHECK(out->is_empty());
    CHECK(out->ring_capacity() == 0);
  }

  // A burst: the first write stays inline, the others go to a ring.
  ch.write(ByteBuf::from("b"));
  ch.write(ByteBuf::from("c"));
  ch.write(ByteBuf::from("d"));
  CHECK(out->unflushed_size() == 3);
  CHECK(out->ring_capacity() == 8);
  ch.flush();
  CHECK(gathered(*out) == "bcd");
  ch.add_outbound_byte_budget(1);  // "b" leaves: the head of the queue is now in the ring
  CHECK(out->size() == 2);
  CHECK(out->ring_capacity() == 8);
  // A write behind messages in the ring queues behind them, not in the free inline slot.
  ch.write(ByteBuf::from("e"));
  CHECK(out->unflushed_size() == 1);
  ch.flush();
  CHECK(gathered(*out) == "cde");
  CHECK(out->current()->get<ByteBuf>().to_string() == "c");
  ch.add_outbound_byte_budget(3);
  CHECK(out->is_empty());
  CHECK(out->ring_capacity() == 0);  // drained: the ring is given back

  // And the next burst takes one again (past the initial capacity, growing it).
  for (int i = 0; i < 20; ++i) ch.write(ByteBuf::from(std::string(1, static_cast<char>('f' + i))));
  CHECK(out->unflushed_size() == 20);
  CHECK(out->ring_capacity() >= 19);
  ch.flush();
  ch.add_outbound_byte_budget(20);
  CHECK(out->is_empty());
  CHECK(out->ring_capacity() == 0);

  std::string all;
  while (auto buf = ch.read_outbound<ByteBuf>()) all += buf->to_string();
  CHECK(all == "aaabcdefghijklmnopqrstuvwxy");
  CHECK_FALSE(ch.finish_and_release_all());
}

TEST_CASE("promises complete in write order across the inline slot and the ring") {
  EmbeddedChannel ch;
  ch.set_outbound_byte_budget(0);
  std::vector<int> order;
  std::vector<ChannelPromise> promises;
  auto write = [&](int i) {
    promises.push_back(ch.new_promise());
    promises.back().future().add_listener([&order, i](const Future<void>&) { order.push_back(i); });
    ch.write(ByteBuf::from("x"), promises.back());
  };
  write(0);
  write(1);
  ch.flush();
  ch.add_outbound_byte_budget(1);  // 0 done; 1 is at the head, in the ring
  write(2);                        // behind 1
  ch.flush();
  ch.add_outbound_byte_budget(1);  // 1 done; 2 waits in the ring
  write(3);
  ch.flush();
  CHECK(order == std::vector<int>{0, 1});
  ch.close();  // fails what is left, in order
  CHECK(order == std::vector<int>{0, 1, 2, 3});
  CHECK(promises[2].is_done());
  CHECK_FALSE(promises[2].is_success());
  CHECK_FALSE(promises[3].is_success());
}

TEST_CASE("repeated bursts of up to 64 writes reuse the freed ring: no allocation once warm") {
  EmbeddedChannel ch;
  auto* out = ch.unsafe().outbound_buffer();
  REQUIRE(out != nullptr);
  auto burst = [&](int n) {
    for (int i = 0; i < n; ++i) ch.write(ByteBuf::from("x"));
    ch.flush();  // the embedded peer takes everything: the queue drains
    while (auto buf = ch.read_outbound<ByteBuf>()) {
    }
  };
  for (int n : {16, 64, 3}) burst(n);  // warm: rings of 8 to 64 entries, the pool, the queues
  testing::AllocationScope allocations;
  for (int round = 0; round < 10; ++round) {
    for (int n : {16, 64, 3}) burst(n);
  }
  CHECK(out->ring_capacity() == 0);
  // ByteBuf::from allocates from the pool, not the heap; the ring arrays come from the spares.
  CHECK(allocations.count() == 0);
  CHECK_FALSE(ch.finish_and_release_all());
}
