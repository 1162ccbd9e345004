// default_executor(): where tasks started without a loop run. By default the process-wide
// ThreadPoolExecutor; a DefaultExecutorProvider (an EventLoopGroup, through
// install_event_loop_group_as_default_executor in transport/) can take its place, so that
// plain spawned tasks and their continuations run on event loops.
#pragma once

#include <trellis/pipeline/event_executor.hpp>

namespace trellis {

/// Hands out the executor for default_executor() once installed with
/// install_default_executor_provider(). executor() is called on any thread.
class DefaultExecutorProvider {
 public:
  virtual ~DefaultExecutorProvider() = default;
  /// The executor default_executor() returns now (any thread).
  virtual EventExecutor& executor() noexcept = 0;
};

/// The provider's executor when one is installed, else the process-wide pool (one thread per
/// core, at least two), created at the first call and alive until the process exits.
EventExecutor& default_executor();

/// Makes provider the source of default_executor(). Refused (false) when default_executor() has
/// already handed out the pool, or when another provider is installed: what was handed out
/// stays valid, and tasks started on the pool do not move. The provider must stay alive until
/// uninstall_default_executor_provider.
bool install_default_executor_provider(DefaultExecutorProvider& provider) noexcept;
/// Removes provider if it is the installed one (true); afterwards default_executor() hands out
/// the pool, or another provider may be installed. Not to be raced with default_executor() calls
/// that may still return the provider's executors: uninstall when no such call can happen.
bool uninstall_default_executor_provider(DefaultExecutorProvider& provider) noexcept;

}  // namespace trellis
