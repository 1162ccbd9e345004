// The open transport channels of the current event loop thread, closed by one on_shutdown hook
// when the loop shuts down (so no channel outlives its loop with a live socket).
#pragma once

#include <memory>
#include <mutex>

#include <trellis/pipeline/unique_function.hpp>

namespace trellis {

class EventLoop;

namespace detail {

// A transport channel that can be force-closed when its loop shuts down. Intrusively linked:
// tracking costs no allocation per connection.
class LoopRegisteredChannel {
 public:
  virtual void close_for_shutdown() = 0;

 protected:
  ~LoopRegisteredChannel() = default;
  // On the loop thread: start / stop tracking this channel. track() throws
  // RejectedExecutionError, tracking nothing, once the loop has closed its channels for shutdown
  // or refuses the hook that would close this one: registration fails and the channel closes.
  void track(EventLoop& loop);
  void untrack() noexcept;

 private:
  friend struct LoopChannelList;
  LoopRegisteredChannel* prev_ = nullptr;
  LoopRegisteredChannel* next_ = nullptr;
  bool tracked_ = false;
};

// Deletes a channel with a task on its loop while the loop runs, so outbound tasks that other
// threads posted before dropping the last reference run before the channel goes away; inline
// once the loop has shut down. The deleter owns the channel (a unique_ptr capture), so a task
// the loop refuses and destroys unrun deletes it too.
void delete_on_loop(EventLoop& loop, UniqueFunction<void()> deleter);

}  // namespace detail
}  // namespace trellis
