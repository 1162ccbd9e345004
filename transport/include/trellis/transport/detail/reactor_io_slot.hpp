// ReactorIoSlot: where a socket or datagram channel keeps its ReactorIo (the socket registered
// with the loop's Asio reactor and its two readiness waits, transport/src/reactor_io.hpp)
// without the public headers seeing Asio. The size and alignment are those of ReactorIo on the
// supported platform; reactor_io.hpp checks them at compile time.
#pragma once

#include <cstddef>

#include <trellis/transport/detail/inline_pimpl.hpp>

namespace trellis::detail {

struct ReactorIo;

inline constexpr std::size_t kReactorIoSize = 248;
inline constexpr std::size_t kReactorIoAlign = 8;

using ReactorIoSlot = InlinePimpl<ReactorIo, kReactorIoSize, kReactorIoAlign>;

}  // namespace trellis::detail
