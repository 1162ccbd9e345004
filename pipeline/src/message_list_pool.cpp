// The per-thread pool behind PooledMessageList (see message_list_pool.hpp).
#include <trellis/pipeline/detail/message_list_pool.hpp>

namespace trellis::detail {

namespace {
constexpr std::size_t kMaxPooledLists = 16;
constexpr std::size_t kMaxPooledCapacity = 1024;

// The free lists of this thread. Trivially destructible and constant-initialised, so a decode
// reaches it without a TLS guard call; the lists' memory is freed at thread exit by a Reaper,
// registered with the first list kept.
struct ListPool {
  std::vector<Message>* lists = nullptr;  // kMaxPooledLists slots once registered
  std::size_t count = 0;
  bool dead = false;
};
thread_local constinit ListPool t_pool{};

struct Reaper {
  std::vector<Message> storage[kMaxPooledLists];
  Reaper() { t_pool.lists = storage; }
  ~Reaper() {
    t_pool.dead = true;
    t_pool.lists = nullptr;
    t_pool.count = 0;
  }
};

[[gnu::noinline]] void register_reaper() noexcept {
  static thread_local Reaper reaper;
  (void)reaper;
}
}  // namespace

std::vector<Message> acquire_message_list() {
  if (t_pool.count == 0) return {};
  return std::move(t_pool.lists[--t_pool.count]);
}

void release_message_list(std::vector<Message>&& list) noexcept {
  list.clear();
  if (t_pool.count < kMaxPooledLists && list.capacity() <= kMaxPooledCapacity && !t_pool.dead) {
    if (t_pool.lists == nullptr) register_reaper();
    t_pool.lists[t_pool.count++] = std::move(list);  // moves the buffer: no allocation
  }
}

}  // namespace trellis::detail
