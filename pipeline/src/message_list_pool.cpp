// The per-thread pool behind PooledMessageList (see message_list_pool.hpp).
#include <trellis/pipeline/message_list_pool.hpp>

namespace trellis::detail {

namespace {
constexpr std::size_t kMaxPooledLists = 16;
constexpr std::size_t kMaxPooledCapacity = 1024;

struct ListPool {
  std::vector<std::vector<Message>> free;
  ListPool() { free.reserve(kMaxPooledLists); }
};
thread_local ListPool t_pool;
}  // namespace

std::vector<Message> acquire_message_list() {
  if (t_pool.free.empty()) return {};
  std::vector<Message> list = std::move(t_pool.free.back());
  t_pool.free.pop_back();
  return list;
}

void release_message_list(std::vector<Message>&& list) noexcept {
  list.clear();
  if (t_pool.free.size() < kMaxPooledLists && list.capacity() <= kMaxPooledCapacity) {
    t_pool.free.push_back(std::move(list));  // no allocation: capacity reserved up front
  }
}

}  // namespace trellis::detail
