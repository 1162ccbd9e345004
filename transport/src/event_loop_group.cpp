// A group of event loops (see event_loop_group.hpp).
#include <trellis/transport/event_loop_group.hpp>

#include <spdlog/spdlog.h>

namespace trellis {

EventLoopGroup::EventLoopGroup(std::size_t n) : EventLoopGroup(n, EventLoopOptions{}) {}

EventLoopGroup::EventLoopGroup(std::size_t n, EventLoopOptions options)
    : shared_(std::make_shared<Shared>()) {
  if (n == 0) n = std::max(1u, std::thread::hardware_concurrency());
  loops_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    EventLoopOptions loop_options = options;
    if (!loop_options.name.empty()) loop_options.name += "-" + std::to_string(i);
    auto loop = std::make_shared<EventLoop>(std::move(loop_options));
    loop->termination_future().add_listener([shared = shared_, n](const Future<void>&) {
      if (shared->terminated.fetch_add(1) + 1 == n) shared->termination.try_set_value();
    });
    loops_.push_back(std::move(loop));
  }
}

EventLoopGroup::~EventLoopGroup() {
  uninstall_default_executor_provider(as_default_);
  if (contains_current_thread()) {
    spdlog::error(
        "trellis: EventLoopGroup destroyed from one of its own threads; its loops shut down and "
        "end on their own");
    for (auto& loop : loops_) {
      try {
        loop->keep_alive_until_exit(loop);
      } catch (const RejectedExecutionError&) {
        // Already past its last task: keep the object rather than free it under its thread.
        new std::shared_ptr<EventLoop>(loop);
      }
      loop->shutdown_gracefully(std::chrono::nanoseconds(0), std::chrono::nanoseconds(0));
    }
    return;
  }
  shutdown_gracefully(std::chrono::nanoseconds(0), std::chrono::seconds(15));
  join();
}

EventLoopGroup& EventLoopGroup::singleton() {
  // Never destroyed: its loops must outlive every static that might still use them.
  static EventLoopGroup* const group = [] {
    auto* g = new EventLoopGroup(0, EventLoopOptions{.name = "trellis-io"});
    g->singleton_ = true;
    for (auto& loop : g->loops_) loop->forbid_shutdown();
    return g;
  }();
  return *group;
}

EventExecutor& EventLoopGroup::AsDefault::executor() noexcept {
  for (auto& loop : group_.loops_) {
    if (loop->in_event_loop()) return *loop;
  }
  return group_.next();
}

bool install_event_loop_group_as_default_executor(EventLoopGroup& group) noexcept {
  return install_default_executor_provider(group.as_default_);
}

EventLoop& EventLoopGroup::next() noexcept {
  return *loops_[next_.fetch_add(1, std::memory_order_relaxed) % loops_.size()];
}

bool EventLoopGroup::contains_current_thread() const noexcept {
  for (auto& loop : loops_) {
    if (loop->in_event_loop()) return true;
  }
  return false;
}

Future<void> EventLoopGroup::shutdown_gracefully(std::chrono::nanoseconds quiet_period,
                                                 std::chrono::nanoseconds timeout) {
  if (singleton_) throw IllegalStateError("EventLoopGroup::singleton() cannot be shut down");
  for (auto& loop : loops_) loop->shutdown_gracefully(quiet_period, timeout);
  return shared_->termination.future();
}

void EventLoopGroup::join() {
  if (singleton_) throw IllegalStateError("EventLoopGroup::singleton() never terminates");
  if (contains_current_thread()) {
    throw BlockingOperationError("EventLoopGroup::join from one of its own threads");
  }
  for (auto& loop : loops_) loop->join();
}

}  // namespace trellis
