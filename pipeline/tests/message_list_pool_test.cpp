// PooledMessageList: nested scopes borrow distinct lists from the thread's stack, warm lists
// allocate nothing, and the stack neither runs out nor keeps a huge list.
#include <doctest/doctest.h>

#include <functional>
#include <set>
#include <thread>
#include <vector>

#include <trellis/pipeline/detail/message_list_pool.hpp>
#include <trellis/testing/allocation_counter.hpp>

using namespace trellis;
using trellis::detail::PooledMessageList;

namespace {

// Borrows a list at each of `depth` nested levels, fills it, and records its address.
void nest(int depth, std::vector<std::vector<Message>*>& seen) {
  if (depth == 0) return;
  PooledMessageList pooled;
  auto& list = pooled.list();
  CHECK(list.empty());
  for (int i = 0; i < 8; ++i) list.emplace_back(i);
  seen.push_back(&list);
  nest(depth - 1, seen);
  // The inner scopes left this one's messages alone.
  REQUIRE(list.size() == 8);
  CHECK(list[7].get<int>() == 7);
}

}  // namespace

TEST_CASE("nested scopes borrow distinct lists, and warm lists allocate nothing") {
  REQUIRE(testing::allocation_hook_installed());
  std::thread([] {
    std::vector<std::vector<Message>*> first;
    first.reserve(64);
    nest(4, first);
    CHECK(std::set<std::vector<Message>*>(first.begin(), first.end()).size() == 4);

    // The same lists again, in the same order, with their capacity: no allocation.
    std::vector<std::vector<Message>*> again;
    again.reserve(64);
    testing::AllocationScope scope;
    nest(4, again);
    CHECK(scope.count() == 0);
    CHECK(again == first);
  }).join();
}

TEST_CASE("nesting deeper than the stack falls back to lists of the scope's own") {
  std::thread([] {
    std::vector<std::vector<Message>*> seen;
    seen.reserve(64);
    nest(40, seen);
    CHECK(std::set<std::vector<Message>*>(seen.begin(), seen.end()).size() == 40);
    // The stack is whole again afterwards: a new scope gets the first list back.
    PooledMessageList pooled;
    CHECK(&pooled.list() == seen.front());
  }).join();
}

TEST_CASE("a list grown past the kept capacity gives its memory back") {
  std::thread([] {
    std::vector<Message>* address = nullptr;
    {
      PooledMessageList pooled;
      address = &pooled.list();
      for (int i = 0; i < 5000; ++i) pooled.list().emplace_back(i);
    }
    PooledMessageList pooled;
    CHECK(&pooled.list() == address);
    CHECK(pooled.list().empty());
    CHECK(pooled.list().capacity() == 0);
  }).join();
}
