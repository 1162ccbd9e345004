// EventLoopGroup: N event loops (one thread each) handed out round robin by next(), and
// install_event_loop_group_as_default_executor, which makes them what default_executor() hands out.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include <trellis/pipeline/default_executor.hpp>
#include <trellis/pipeline/task.hpp>
#include <trellis/transport/event_loop.hpp>
#include <trellis/transport/event_loop_options.hpp>

namespace trellis {

/// N event loops, one thread each, handed out round robin by next(). Every member may be
/// called from any thread, except the destructor and join(), which must not run on one of the
/// group's own threads.
class EventLoopGroup {
 public:
  /// Starts n loops; n == 0: one loop per core.
  explicit EventLoopGroup(std::size_t n = 0);
  /// Every loop built with options (a non-empty name gets "-<index>" appended); tests pass
  /// {.clock = manual_clock} to run the whole group in virtual time.
  EventLoopGroup(std::size_t n, EventLoopOptions options);
  /// Shuts down every loop (no quiet period) and joins the threads. From one of the group's own
  /// threads this is a programming error: it is logged and the threads are detached (each loop
  /// object stays alive until its thread ends).
  ~EventLoopGroup();
  EventLoopGroup(const EventLoopGroup&) = delete;
  EventLoopGroup& operator=(const EventLoopGroup&) = delete;

  /// A process-wide group for applications that want one (SwiftNIO's
  /// MultiThreadedEventLoopGroup.singleton): made on first use with one loop per core (threads
  /// named trellis-io-N), and never shut down: shutdown_gracefully() and join(), on the group or
  /// on one of its loops, throw IllegalStateError. Its threads end with the process. HttpClient
  /// made without a group uses it. Thread-safe.
  static EventLoopGroup& singleton();
  /// True for singleton().
  bool is_singleton() const noexcept { return singleton_; }

  /// The next loop, round robin.
  EventLoop& next() noexcept;
  /// Starts task on the next loop (EventExecutor::spawn): it runs there, and resumes there after
  /// every co_await.
  template <class T>
  Future<T> spawn(Task<T> task) {
    return next().spawn(std::move(task));
  }
  /// How many loops the group has.
  std::size_t size() const noexcept { return loops_.size(); }
  /// The loop at index i (i < size()).
  EventLoop& operator[](std::size_t i) const noexcept { return *loops_[i]; }
  /// True on one of the group's loop threads.
  bool contains_current_thread() const noexcept;

  /// Walks the group's loops (as EventLoop&) in index order.
  class Iterator {
   public:
    /// The iterator over the group's loop pointers that it wraps.
    using Inner = std::vector<std::shared_ptr<EventLoop>>::const_iterator;
    /// Wraps it.
    explicit Iterator(Inner it) : it_(it) {}
    /// The loop.
    EventLoop& operator*() const { return **it_; }
    /// Moves to the next loop.
    Iterator& operator++() {
      ++it_;
      return *this;
    }
    /// True when both point at the same loop.
    bool operator==(const Iterator&) const = default;

   private:
    Inner it_;
  };
  /// The first loop.
  Iterator begin() const { return Iterator(loops_.begin()); }
  /// Past the last loop.
  Iterator end() const { return Iterator(loops_.end()); }

  /// Shuts every loop down gracefully (IllegalStateError for singleton()). The future completes
  /// when all loops have terminated (their threads have run their last task; join() then returns at
  /// once).
  Future<void> shutdown_gracefully(std::chrono::nanoseconds quiet_period = std::chrono::seconds(2),
                                   std::chrono::nanoseconds timeout = std::chrono::seconds(15));
  /// Completes when every loop has terminated.
  Future<void> termination_future() const { return shared_->termination.future(); }
  /// Waits for termination and joins the threads (not from one of them; IllegalStateError for
  /// singleton(), which never terminates).
  void join();

 private:
  friend bool install_event_loop_group_as_default_executor(EventLoopGroup& group) noexcept;
  // default_executor() while this group is installed: the calling thread's loop when it is
  // one of ours (no hop), else the next loop.
  class AsDefault final : public DefaultExecutorProvider {
   public:
    explicit AsDefault(EventLoopGroup& group) : group_(group) {}
    EventExecutor& executor() noexcept override;

   private:
    EventLoopGroup& group_;
  };

  std::vector<std::shared_ptr<EventLoop>> loops_;
  std::atomic<std::size_t> next_{0};
  bool singleton_ = false;
  struct Shared {
    std::atomic<std::size_t> terminated{0};
    Promise<void> termination;
  };
  std::shared_ptr<Shared> shared_;
  AsDefault as_default_{*this};
};

/// Makes default_executor() hand out group's loops: on one of them, that loop; elsewhere the
/// group's next(). So tasks spawned on default_executor() and their continuations run on the
/// group's loops instead of the process-wide pool. Returns false, changing nothing, when
/// default_executor() has already handed out the pool or another group is installed. The group
/// uninstalls itself when destroyed; from then on default_executor() is the pool again.
bool install_event_loop_group_as_default_executor(EventLoopGroup& group) noexcept;

}  // namespace trellis
