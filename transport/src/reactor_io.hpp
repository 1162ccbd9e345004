// ReactorIo: a channel's socket registered with its loop's reactor and its two reusable
// readiness waits. Kept out of the public channel headers, which only hold a pointer to it: these
// types need Asio's reactor internals.
#pragma once

#include <trellis/transport/detail/reactor_descriptor.hpp>

namespace trellis::detail {

struct ReactorIo {
  explicit ReactorIo(asio::io_context& context) : socket(context) {}

  ReactorDescriptor socket;
  ReadinessWait read_wait;
  ReadinessWait write_wait;  // writability, or a stream socket's connect completion
};

}  // namespace trellis::detail
