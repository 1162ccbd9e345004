// ReactorIo: a channel's socket registered with its loop's reactor and its two reusable
// readiness waits. Kept out of the public channel headers, which hold it in a ReactorIoSlot
// (inside the channel, no allocation of its own): these types need Asio's reactor internals.
#pragma once

#include <trellis/transport/detail/reactor_descriptor.hpp>
#include <trellis/transport/detail/reactor_io_slot.hpp>

namespace trellis::detail {

struct ReactorIo {
  explicit ReactorIo(asio::io_context& context) : socket(context) {}

  ReactorDescriptor socket;
  ReadinessWait read_wait;
  ReadinessWait write_wait;  // writability, or a stream socket's connect completion
};

// The slot wastes nothing: keep kReactorIoSize and kReactorIoAlign exact.
static_assert(sizeof(ReactorIo) == kReactorIoSize, "set kReactorIoSize to sizeof(ReactorIo)");
static_assert(alignof(ReactorIo) == kReactorIoAlign, "set kReactorIoAlign to alignof(ReactorIo)");

}  // namespace trellis::detail
