// The per-thread stack behind PooledMessageList (see message_list_pool.hpp).
#include <trellis/pipeline/detail/message_list_pool.hpp>

namespace trellis::detail {

namespace {
constexpr std::size_t kMaxPooledLists = 16;
constexpr std::size_t kMaxPooledCapacity = 1024;

// This thread's lists. Trivially destructible and constant-initialised, so a decode reaches it
// without a TLS guard call; the lists themselves live in a Reaper, registered with the first
// borrow, which frees them at thread exit.
struct ListStack {
  std::vector<Message>* lists = nullptr;  // kMaxPooledLists slots once registered
  std::size_t borrowed = 0;               // lists[0, borrowed) are in use
  bool dead = false;
};
thread_local constinit ListStack t_stack{};

struct Reaper {
  std::vector<Message> storage[kMaxPooledLists];
  Reaper() { t_stack.lists = storage; }
  ~Reaper() {
    t_stack.dead = true;
    t_stack.lists = nullptr;
  }
};

[[gnu::noinline]] void register_reaper() noexcept {
  static thread_local Reaper reaper;
  (void)reaper;
}
}  // namespace

std::vector<Message>* borrow_message_list() noexcept {
  ListStack& s = t_stack;
  if (s.lists == nullptr) [[unlikely]] {
    if (s.dead) return nullptr;
    register_reaper();
  }
  if (s.borrowed == kMaxPooledLists) return nullptr;
  return &s.lists[s.borrowed++];
}

void return_message_list(std::vector<Message>& list) noexcept {
  list.clear();
  // A list grown by one huge batch does not keep its memory.
  if (list.capacity() > kMaxPooledCapacity) std::vector<Message>().swap(list);
  --t_stack.borrowed;
}

}  // namespace trellis::detail
