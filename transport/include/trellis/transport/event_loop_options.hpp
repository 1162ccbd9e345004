// EventLoopOptions: how an EventLoop (or every loop of an EventLoopGroup) is built: its thread's
// name and, for tests, the ManualClock it reads its time from instead of the monotonic clock.
#pragma once

#include <memory>
#include <string>

#include <trellis/pipeline/manual_clock.hpp>

namespace trellis {

/// Settings of an EventLoop (and of each loop of an EventLoopGroup).
struct EventLoopOptions {
  /// The loop thread's name (at most 15 characters are kept); empty: trellis-el-N. A group
  /// appends the loop's index to a non-empty name.
  std::string name{};
  /// Null (production): the loop's time is the monotonic clock. Set: every deadline of the loop
  /// (scheduled tasks, sleeps, connect and drain timeouts, accept back-off, idle and keep-alive
  /// stamps) is on this clock, and the loop's timers fire only when it is advanced past them.
  std::shared_ptr<ManualClock> clock{};
};

}  // namespace trellis
