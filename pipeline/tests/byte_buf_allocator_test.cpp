#include <doctest/doctest.h>

#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/pooled_byte_buf_allocator.hpp>
#include <trellis/pipeline/unpooled_byte_buf_allocator.hpp>
#include <trellis/testing/allocation_counter.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using namespace trellis;

TEST_CASE("buffer rejects an initial capacity above the max and a max above the limit") {
  UnpooledByteBufAllocator alloc;
  CHECK_THROWS_WITH_AS(alloc.buffer(10, 5), "initial capacity 10 exceeds max capacity 5",
                       InvalidArgumentError);
  CHECK_THROWS_AS(alloc.buffer(0, ByteBufAllocator::kDefaultMaxCapacity + 1), InvalidArgumentError);
  ByteBuf buf = alloc.buffer(0);
  CHECK(buf.capacity() == 0);
  CHECK(buf.max_capacity() == ByteBufAllocator::kDefaultMaxCapacity);
  CHECK(buf.ref_count() == 1);
  buf.write_u8(1);  // an empty buffer still has storage to grow from
  CHECK(buf.capacity() == 64);
}

TEST_CASE("unpooled live counters follow the buffers and return to zero") {
  UnpooledByteBufAllocator alloc;
  {
    ByteBuf a = alloc.buffer(100);
    ByteBuf b = alloc.buffer(28);
    ByteBuf a2 = a.share();  // shares are not buffers
    auto s = alloc.stats();
    CHECK(s.live_buffers == 2);
    CHECK(s.live_bytes == 128);
    CHECK(s.total_buffers == 2);
    CHECK(s.cache_hits == 0);
    a = ByteBuf();
    CHECK(alloc.stats().live_buffers == 2);
    a2 = ByteBuf();
    s = alloc.stats();
    CHECK(s.live_buffers == 1);
    CHECK(s.live_bytes == 28);
  }
  const auto s = alloc.stats();
  CHECK(s.live_buffers == 0);
  CHECK(s.live_bytes == 0);
  CHECK(s.total_bytes == 128);
}

TEST_CASE("an unpooled buffer may outlive its allocator") {
  ByteBuf survivor;
  {
    UnpooledByteBufAllocator alloc;
    survivor = alloc.buffer(8);
  }
  survivor.write_u64(42);
  survivor.write_u64(43);  // grows through the (gone) allocator's shared counters
  CHECK(survivor.read_u64() == 42);
}

TEST_CASE("a pooled allocation reuses the block freed last in its size class") {
  PooledByteBufAllocator alloc;
  const std::byte* first;
  {
    ByteBuf a = alloc.buffer(200);
    first = a.data();
  }
  auto s = alloc.stats();
  CHECK(s.live_buffers == 0);
  CHECK(s.cached_blocks == 1);
  {
    ByteBuf b = alloc.buffer(256);  // same class (256 B)
    CHECK(b.data() == first);
    ByteBuf c = alloc.buffer(200);  // the cache is empty again: a new block
    CHECK(c.data() != first);
    ByteBuf d = alloc.buffer(100);  // another class
    CHECK(d.data() != first);
  }
  s = alloc.stats();
  CHECK(s.cache_hits == 1);
  CHECK(s.total_buffers == 4);
  CHECK(s.live_buffers == 0);
  CHECK(s.cached_blocks == 3);
  CHECK(s.thread_caches == 1);
}

TEST_CASE("pooled sizes round up to a size class and large requests bypass the pool") {
  PooledByteBufAllocator alloc;
  {
    ByteBuf tiny = alloc.buffer(0);
    ByteBuf small = alloc.buffer(65);
    ByteBuf largest = alloc.buffer(PooledByteBufAllocator::kMaxSizeClass);
    auto s = alloc.stats();
    CHECK(s.live_bytes == 64 + 128 + 65536);
    ByteBuf huge = alloc.buffer(100000);
    s = alloc.stats();
    CHECK(s.live_buffers == 4);
    CHECK(s.live_bytes == 64 + 128 + 65536 + 100000);
    CHECK(huge.capacity() == 100000);
    huge = ByteBuf();
    CHECK(alloc.stats().cached_blocks == 0);  // not cached: freed to the heap
  }
  const auto s = alloc.stats();
  CHECK(s.live_buffers == 0);
  CHECK(s.live_bytes == 0);
  CHECK(s.cached_blocks == 3);
}

TEST_CASE("steady-state pooled allocate and free performs zero operator new calls") {
  REQUIRE(trellis::testing::allocation_hook_installed());
  PooledByteBufAllocator alloc;
  ByteBufAllocator& shared = ByteBufAllocator::default_allocator();
  for (std::size_t size : {64, 256, 4096, 65536}) {
    (void)alloc.buffer(size);  // warm-up: makes the thread cache and one block per class
    (void)shared.buffer(size);
  }
  {
    ByteBuf warm = ByteBuf::from("warm-up");
    warm.write_string(" and grow");
  }
  std::size_t readable = 0;
  trellis::testing::AllocationScope scope;
  for (int i = 0; i < 1000; ++i) {
    for (std::size_t size : {64, 256, 4096, 65536}) {
      ByteBuf buf = alloc.buffer(size);
      buf.write_u32(static_cast<std::uint32_t>(i));
      ByteBuf view = buf.share();
      ByteBuf other = shared.buffer(size);
      other.write_bytes(view);
      readable += other.readable_bytes();
    }
    ByteBuf text = ByteBuf::from("GET / HTTP/1.1");
    readable += text.readable_bytes();
  }
  const std::uint64_t allocations = scope.count();
  CHECK(allocations == 0);
  CHECK(readable == 1000 * (4 * 4 + 14));
  CHECK(alloc.stats().live_buffers == 0);
  CHECK(alloc.stats().cache_hits >= 4000);
}

TEST_CASE("a block freed on another thread returns to its owner's cache") {
  PooledByteBufAllocator alloc;
  ByteBuf buf = alloc.buffer(1000);
  buf.write_string("cross-thread");
  const std::byte* block = buf.data();
  std::thread([b = std::move(buf)]() mutable { b = ByteBuf(); }).join();
  auto s = alloc.stats();
  CHECK(s.live_buffers == 0);   // counted as freed at once
  CHECK(s.cached_blocks == 0);  // but waiting on the owner's remote-free list
  {
    ByteBuf again = alloc.buffer(1024);  // the owner drains its remote frees first
    CHECK(again.data() == block);
  }
  s = alloc.stats();
  CHECK(s.live_buffers == 0);
  CHECK(s.cached_blocks == 1);
}

TEST_CASE("many threads free buffers while the owner keeps allocating") {
  PooledByteBufAllocator alloc;
  std::mutex mutex;
  std::condition_variable cv;
  std::condition_variable space;
  std::deque<ByteBuf> queue;
  bool done = false;
  auto consumer = [&] {
    for (;;) {
      ByteBuf buf;
      {
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return !queue.empty() || done; });
        if (queue.empty()) return;
        buf = std::move(queue.front());
        queue.pop_front();
      }
      space.notify_one();
      CHECK(buf.readable_bytes() >= 4);
    }
  };
  std::thread c1(consumer);
  std::thread c2(consumer);
  std::thread producer([&] {
    for (int i = 0; i < 4000; ++i) {
      ByteBuf buf = alloc.buffer(static_cast<std::size_t>(64 << (i % 5)));
      buf.write_u32(static_cast<std::uint32_t>(i));
      {
        // Bounded, so frees keep coming back while the producer allocates.
        std::unique_lock lock(mutex);
        space.wait(lock, [&] { return queue.size() < 16; });
        queue.push_back(std::move(buf));
      }
      cv.notify_one();
    }
    std::lock_guard lock(mutex);
    done = true;
    cv.notify_all();
  });
  producer.join();
  c1.join();
  c2.join();
  const auto s = alloc.stats();
  CHECK(s.live_buffers == 0);
  CHECK(s.live_bytes == 0);
  CHECK(s.total_buffers == 4000);
  CHECK(s.cache_hits > 0);
}

TEST_CASE("a thread's cache is freed at thread exit even while its buffers live elsewhere") {
  PooledByteBufAllocator alloc;
  ByteBuf survivor;
  std::thread([&] {
    ByteBuf a = alloc.buffer(128);
    ByteBuf b = alloc.buffer(128);
    survivor = alloc.buffer(128);
    survivor.write_string("outlives its thread");
  }).join();
  auto s = alloc.stats();
  CHECK(s.live_buffers == 1);
  CHECK(s.cached_blocks == 0);  // the exited thread's cache gave its blocks back
  CHECK(survivor.to_string() == "outlives its thread");
  survivor.write_bytes(std::vector<std::byte>(200));  // grows from this thread's cache
  survivor = ByteBuf();
  s = alloc.stats();
  CHECK(s.live_buffers == 0);
  CHECK(s.live_bytes == 0);
}

TEST_CASE("a new thread reuses the cache an exited thread left behind") {
  PooledByteBufAllocator alloc;
  for (int i = 0; i < 3; ++i) {
    std::thread([&] { ByteBuf buf = alloc.buffer(64); }).join();
  }
  const auto s = alloc.stats();
  CHECK(s.thread_caches == 1);
  CHECK(s.total_buffers == 3);
  CHECK(s.live_buffers == 0);
}

TEST_CASE("thread caches keep a bounded number of blocks per size class") {
  PooledByteBufAllocator::Options options;
  options.max_cached_blocks_per_class = 2;
  options.max_cached_bytes_per_class = 16 * 1024;
  PooledByteBufAllocator alloc(options);
  {
    std::vector<ByteBuf> bufs;
    for (int i = 0; i < 5; ++i) bufs.push_back(alloc.buffer(64));
    for (int i = 0; i < 5; ++i) bufs.push_back(alloc.buffer(16 * 1024));
    for (int i = 0; i < 2; ++i) bufs.push_back(alloc.buffer(32 * 1024));
  }
  const auto s = alloc.stats();
  CHECK(s.cached_blocks == 3);  // 2 of 64 B, 1 of 16 KiB (byte bound), none of 32 KiB
  CHECK(s.live_buffers == 0);
}

TEST_CASE("a thread cache keeps at most max_cached_bytes over all size classes") {
  PooledByteBufAllocator::Options options;
  options.max_cached_bytes = 64 * 1024;
  PooledByteBufAllocator alloc(options);
  std::vector<ByteBuf> bufs;
  for (int i = 0; i < 3; ++i) bufs.push_back(alloc.buffer(32 * 1024));
  for (int i = 0; i < 4; ++i) bufs.push_back(alloc.buffer(8 * 1024));
  for (auto& b : bufs) b = ByteBuf();  // freed in order: two of 32 KiB fill the 64 KiB
  CHECK(alloc.stats().cached_blocks == 2);
  bufs.clear();
  { ByteBuf big = alloc.buffer(32 * 1024); }   // a hit, then kept again
  { ByteBuf small = alloc.buffer(8 * 1024); }  // from the heap, and 72 KiB would be too many
  CHECK(alloc.stats().cached_blocks == 2);
  CHECK(alloc.stats().cache_hits == 1);
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("by default a working set of 64 blocks of 64 KiB cycles without operator new") {
  REQUIRE(trellis::testing::allocation_hook_installed());
  PooledByteBufAllocator alloc;
  std::vector<ByteBuf> bufs;
  bufs.reserve(64);
  auto cycle = [&] {
    for (int i = 0; i < 64; ++i)
      bufs.push_back(alloc.buffer(PooledByteBufAllocator::kMaxSizeClass));
    bufs.clear();
  };
  cycle();  // fills the cache
  trellis::testing::AllocationScope scope;
  for (int round = 0; round < 10; ++round) cycle();
  CHECK(scope.count() == 0);
  CHECK(alloc.stats().cached_blocks == 64);
}

TEST_CASE("trim_thread_cache frees the calling thread's cached blocks") {
  PooledByteBufAllocator alloc;
  { ByteBuf a = alloc.buffer(64), b = alloc.buffer(4096); }
  {
    ByteBuf c = alloc.buffer(64);
    std::thread([c = std::move(c)]() mutable { c = ByteBuf(); }).join();
  }
  CHECK(alloc.stats().cached_blocks == 1);
  alloc.trim_thread_cache();
  CHECK(alloc.stats().cached_blocks == 0);
  CHECK(alloc.stats().live_buffers == 0);
}

TEST_CASE("a thread with caches for more allocators than slots still allocates") {
  std::vector<std::unique_ptr<PooledByteBufAllocator>> allocs;
  for (std::size_t i = 0; i < PooledByteBufAllocator::kMaxThreadCachesPerThread + 2; ++i) {
    allocs.push_back(std::make_unique<PooledByteBufAllocator>());
  }
  std::thread([&] {
    std::vector<ByteBuf> bufs;
    for (auto& a : allocs) bufs.push_back(a->buffer(64));
    for (auto& b : bufs) b.write_u32(7);
  }).join();
  for (auto& a : allocs) {
    CHECK(a->stats().live_buffers == 0);
    CHECK(a->stats().total_buffers == 1);
  }
  CHECK(allocs.back()->stats().thread_caches == 0);  // served without a cache
}

TEST_CASE("allocators destroyed in turn release the calling thread's caches") {
  // Each allocator made and destroyed on this thread takes a cache slot only while it lives.
  for (int i = 0; i < 3 * static_cast<int>(PooledByteBufAllocator::kMaxThreadCachesPerThread);
       ++i) {
    PooledByteBufAllocator alloc;
    ByteBuf buf = alloc.buffer(64);
    buf = ByteBuf();
    CHECK(alloc.stats().thread_caches == 1);
  }
}

TEST_CASE("the default allocator is one process-wide pooled allocator") {
  ByteBufAllocator& a = ByteBufAllocator::default_allocator();
  CHECK(&a == &ByteBufAllocator::default_allocator());
  CHECK(dynamic_cast<PooledByteBufAllocator*>(&a) != nullptr);
  const auto before = a.stats();
  {
    ByteBuf buf = ByteBuf::from("x");
    CHECK(a.stats().live_buffers == before.live_buffers + 1);
  }
  CHECK(a.stats().live_buffers == before.live_buffers);
}

TEST_CASE("growth and copies allocate from the buffer's own allocator") {
  UnpooledByteBufAllocator unpooled;
  PooledByteBufAllocator pooled;
  {
    ByteBuf u = unpooled.buffer(4);
    u.write_u64(1);
    ByteBuf uc = u.copy();
    ByteBuf p = pooled.buffer(64);
    p.set_writer_index(64);
    p.write_u8(1);
    ByteBuf pc = p.copy();
    CHECK(unpooled.stats().total_buffers == 3);
    CHECK(unpooled.stats().live_buffers == 2);
    CHECK(pooled.stats().total_buffers == 3);
    CHECK(pooled.stats().live_buffers == 2);
  }
  CHECK(unpooled.stats().live_buffers == 0);
  CHECK(pooled.stats().live_buffers == 0);
}
