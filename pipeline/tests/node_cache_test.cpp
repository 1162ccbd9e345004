// NodeCache: blocks come back to the thread that frees them, whole batches move through the
// process-wide depot, and the depot keeps a bounded amount of memory, all block sizes together.
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include <trellis/pipeline/detail/node_cache.hpp>

using trellis::detail::kMaxDepotBytes;
using trellis::detail::node_depot_bytes;
using trellis::detail::NodeCache;

namespace {
// Allocates n blocks of Size on this thread, then frees them all here: the thread keeps its
// share, the rest spills to the depot in batches, or to the heap once the depot is full.
template <std::size_t Size>
void churn(std::size_t n) {
  std::vector<void*> blocks(n);
  for (auto& b : blocks) b = NodeCache<Size>::allocate();
  for (auto* b : blocks) NodeCache<Size>::deallocate(b);
}
}  // namespace

TEST_CASE("a freed block is the next one allocated on the same thread") {
  void* a = NodeCache<96>::allocate();
  NodeCache<96>::deallocate(a);
  void* b = NodeCache<96>::allocate();
#if TRELLIS_NODE_CACHE_ENABLED
  CHECK(b == a);
#endif
  NodeCache<96>::deallocate(b);
}

TEST_CASE("the depot keeps at most kMaxDepotBytes of free blocks, all sizes together") {
  // 80 MiB of 1 KiB blocks and 20 MiB of 512-byte ones, each freed on a thread that then ends:
  // every size on its own stays under the limit of the depot, together they do not.
  std::thread([] { churn<1024>(80 * 1024); }).join();
  std::thread([] { churn<512>(40 * 1024); }).join();
  CHECK(node_depot_bytes() <= kMaxDepotBytes);
#if TRELLIS_NODE_CACHE_ENABLED
  CHECK(node_depot_bytes() >= kMaxDepotBytes / 2);  // the depot took blocks, up to its limit
  // What the depot holds is taken back by a thread that runs dry, without the heap.
  const std::size_t before = node_depot_bytes();
  std::thread([] {
    void* p = NodeCache<1024>::allocate();
    NodeCache<1024>::deallocate(p);
  }).join();
  CHECK(node_depot_bytes() < before);
#endif
}
