// The per-loop-thread list of open transport channels (see loop_channel_registry.hpp).
#include <trellis/transport/detail/loop_channel_registry.hpp>

#include <mutex>
#include <unordered_map>
#include <vector>

#include <trellis/pipeline/error.hpp>

#include <trellis/transport/event_loop.hpp>

namespace trellis::detail {

struct LoopChannelList {
  LoopRegisteredChannel* head = nullptr;
  bool hook_installed = false;
  bool closed = false;  // the hook ran: the loop is shutting down, no channel registers any more

  static void close_all() {
    auto& list = instance();
    list.closed = true;
    // Closing unlinks; collect first so the walk does not depend on the list.
    std::vector<LoopRegisteredChannel*> open;
    for (auto* c = list.head; c != nullptr; c = c->next_) open.push_back(c);
    for (auto* c : open) c->close_for_shutdown();
  }
  static LoopChannelList& instance() noexcept {
    thread_local LoopChannelList list;
    return list;
  }
};

void LoopRegisteredChannel::track(EventLoop& loop) {
  if (tracked_) return;
  auto& list = LoopChannelList::instance();
  if (list.closed) {
    // Nothing would close this channel: it must not register and keep itself alive.
    throw RejectedExecutionError("event loop " + loop.name() + " is shutting down");
  }
  if (!list.hook_installed) {
    loop.on_shutdown([] { LoopChannelList::close_all(); });  // throws once shut down
    list.hook_installed = true;
  }
  tracked_ = true;
  prev_ = nullptr;
  next_ = list.head;
  if (list.head) list.head->prev_ = this;
  list.head = this;
}

void LoopRegisteredChannel::untrack() noexcept {
  if (!tracked_) return;
  auto& list = LoopChannelList::instance();
  if (prev_) {
    prev_->next_ = next_;
  } else {
    list.head = next_;
  }
  if (next_) next_->prev_ = prev_;
  prev_ = next_ = nullptr;
  tracked_ = false;
}

namespace {

// Whether a loop still takes tasks; its mutex is held while a task is handed to the loop, and
// the loop's shutdown hook takes it to mark the loop gone, so the loop object is alive
// whenever execute is called through it.
struct LoopToken {
  std::mutex mutex;
  bool alive = true;
};

// Never destroyed: loops that live as long as the process (EventLoopGroup::singleton()) may
// still use them while static destructors run at exit.
std::mutex& tokens_mutex = *new std::mutex;
std::unordered_map<EventLoop*, std::shared_ptr<LoopToken>>& tokens =
    *new std::unordered_map<EventLoop*, std::shared_ptr<LoopToken>>;

std::shared_ptr<LoopToken> token_of(EventLoop& loop) {
  std::shared_ptr<LoopToken> token;
  {
    std::lock_guard lock(tokens_mutex);
    auto& slot = tokens[&loop];
    if (slot) return slot;
    slot = token = std::make_shared<LoopToken>();
  }
  auto* key = &loop;
  auto retire = [token, key] {
    {
      std::lock_guard lock(token->mutex);
      token->alive = false;
    }
    std::lock_guard lock(tokens_mutex);
    auto it = tokens.find(key);
    if (it != tokens.end() && it->second == token) tokens.erase(it);
  };
  try {
    loop.on_shutdown(retire);
  } catch (...) {
    retire();
  }
  return token;
}

}  // namespace

void delete_on_loop(EventLoop& loop, UniqueFunction<void()> deleter) {
  auto token = token_of(loop);
  {
    std::unique_lock lock(token->mutex);
    if (token->alive) {
      try {
        loop.execute(std::move(deleter));
      } catch (const RejectedExecutionError&) {
        // execute() destroyed the refused task, and with it what the deleter owned.
      }
      return;
    }
  }
  deleter();
}

}  // namespace trellis::detail
