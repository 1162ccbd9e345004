// AsyncServerChannelOptions: how many accepted children an AsyncServerChannel holds for accept(),
// and the options of each child's AsyncChannel.
#pragma once

#include <cstddef>

#include <trellis/pipeline/async_channel_options.hpp>

namespace trellis {

/// Back-pressure of AsyncServerChannel (`ServerBootstrap::bind_async`). Once `high_watermark`
/// accepted children wait for `accept()` (counting those still being set up on their loops), the
/// server channel stops accepting (auto_read off; the kernel's backlog holds further
/// connections); it accepts again when fewer than `low_watermark` wait. `bind_async` throws
/// InvalidArgumentError unless 0 < `low_watermark` <= `high_watermark`.
struct AsyncServerChannelOptions {
  /// Accepting resumes when fewer children than this wait.
  std::size_t low_watermark = 2;
  /// Accepting stops when this many children wait.
  std::size_t high_watermark = 16;
  /// The options of each child's AsyncChannel.
  AsyncChannelOptions child = {};
};

}  // namespace trellis
