// pooled_allocate: the size classes, block reuse, and the objects made per operation that take
// their memory from it (future states, listener boxes, coroutine frames, big callables): warm,
// none of them allocates.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <trellis/pipeline.hpp>
#include <trellis/pipeline/detail/node_cache.hpp>
#include <trellis/pipeline/detail/pooled_alloc.hpp>
#include <trellis/testing.hpp>
#include <trellis/testing/allocation_counter.hpp>

using namespace trellis;
using trellis::detail::pooled_allocate;
using trellis::detail::pooled_class;
using trellis::detail::pooled_class_size;
using trellis::detail::pooled_deallocate;

TEST_CASE("pooled_class: 64-byte classes to 1 KiB, 256-byte ones to 4 KiB, the heap beyond") {
  CHECK(pooled_class(1) == 1);
  CHECK(pooled_class(64) == 1);
  CHECK(pooled_class(65) == 2);
  CHECK(pooled_class(1024) == 16);
  CHECK(pooled_class(1025) == 17);
  CHECK(pooled_class(1280) == 17);
  CHECK(pooled_class(1281) == 18);
  CHECK(pooled_class(4096) == 28);
  CHECK(pooled_class(4097) == 0);
  for (std::size_t n = 1; n <= 4096; ++n) {
    const std::size_t size = pooled_class_size(pooled_class(n));
    // Every size fits its class, and the class is the smallest that fits.
    REQUIRE(size >= n);
    REQUIRE(size - n < (n <= 1024 ? 64u : 256u));
  }
}

TEST_CASE("pooled blocks are reused, aligned, and sizes past 4 KiB come from the heap") {
  REQUIRE(testing::allocation_hook_installed());
  std::thread([] {
    for (std::size_t n : {1u, 48u, 200u, 1000u, 1500u, 4096u}) {
      void* a = pooled_allocate(n);
      CHECK(reinterpret_cast<std::uintptr_t>(a) % alignof(std::max_align_t) == 0);
      std::memset(a, 0xab, n);  // the whole size is usable
      pooled_deallocate(a, n);
      testing::AllocationScope scope;
      void* b = pooled_allocate(n);
      pooled_deallocate(b, n);
#if TRELLIS_NODE_CACHE_ENABLED
      CHECK(b == a);  // the block just given back
      CHECK(scope.count() == 0);
#endif
    }
    testing::AllocationScope big;
    void* p = pooled_allocate(5000);
    std::memset(p, 0, 5000);
    pooled_deallocate(p, 5000);
    CHECK(big.count() == 1);
  }).join();
}

TEST_CASE("blocks given back on another thread come back through the depot") {
  // 600 1.5 KiB blocks: more than a thread keeps of that size, so whole batches move on.
  std::vector<void*> blocks;
  std::thread([&] {
    for (int i = 0; i < 600; ++i) blocks.push_back(pooled_allocate(1500));
  }).join();
  std::thread([&] {
    for (void* p : blocks) pooled_deallocate(p, 1500);
  }).join();
  std::thread([] {
    void* p = pooled_allocate(1500);
    std::memset(p, 1, 1500);
    pooled_deallocate(p, 1500);
  }).join();
}

namespace {
Task<int> add_one(int x) { co_return x + 1; }

Task<int> chain(int n) {
  int total = 0;
  for (int i = 0; i < n; ++i) total = co_await add_one(total);
  co_return total;
}
}  // namespace

TEST_CASE("warm promises, listeners, coroutine frames and big callables allocate nothing") {
  REQUIRE(testing::allocation_hook_installed());
  EmbeddedEventLoop loop;
  auto round = [&loop] {
    int heard = 0;
    for (int i = 0; i < 100; ++i) {
      Promise<std::string> promise(&loop);
      promise.future().add_listener([&heard](const Future<std::string>& f) {
        if (f.is_success()) ++heard;
      });
      promise.set_value("done");
    }
    loop.run_pending_tasks();
    CHECK(heard == 100);
    // A task awaiting 100 others: 101 frames and one spawned state.
    auto sum = loop.spawn(chain(100));
    loop.run_pending_tasks();
    REQUIRE(sum.is_done());
    CHECK(std::move(sum).get() == 100);
    // A callable too big for UniqueFunction's inline storage.
    std::array<char, 200> big{};
    big[0] = 1;
    int called = 0;
    for (int i = 0; i < 100; ++i) {
      UniqueFunction<void()> fn([big, &called] { called += big[0]; });
      fn();
    }
    CHECK(called == 100);
  };
  round();  // warms the caches
  testing::AllocationScope scope;
  round();
#if TRELLIS_NODE_CACHE_ENABLED
  CHECK(scope.count() == 0);
#endif
}
