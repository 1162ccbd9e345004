// The per-channel state of the traffic shaping handlers (internal to pipeline/src).
#pragma once

#include <cstddef>
#include <cstdint>

#include <trellis/pipeline/abstract_traffic_shaping_handler.hpp>
#include <trellis/pipeline/channel_promise.hpp>
#include <trellis/pipeline/detail/ring_buffer.hpp>
#include <trellis/pipeline/message.hpp>
#include <trellis/pipeline/scheduled_future.hpp>

namespace trellis {

struct AbstractTrafficShapingHandler::ChannelState {
  struct PendingWrite {
    Message msg;
    ChannelPromise promise;
    std::size_t size = 0;
    std::int64_t release_at = 0;
  };
  detail::RingBuffer<PendingWrite> queue;
  std::size_t queued_bytes = 0;
  ScheduledFuture<void> write_timer;
  std::int64_t write_timer_at = 0;
  ScheduledFuture<void> read_timer;
  std::int64_t read_resume_at = 0;
  bool read_suspended = false;
  bool cleared_auto_read = false;  // this handler turned auto_read off
  bool read_requested = false;     // a read() was held back
  bool unwritable = false;         // this handler cleared the user-defined writability
  bool active = true;              // false once removed or inactive: timers leave ctx alone

  void cancel_timers() {
    if (write_timer.valid()) write_timer.cancel();
    if (read_timer.valid()) read_timer.cancel();
    write_timer = {};
    read_timer = {};
  }
};

}  // namespace trellis
