// Handler masks: which pipeline events a handler overrides (Netty's ChannelHandlerMask). An event
// walking the pipeline passes by a context whose handler would only hand it on unchanged, so a
// handler that overrides channel_read alone costs nothing on the way of a flush or a
// channel_read_complete. The mask is worked out from the handler's type when it is added.
#pragma once

#include <cstdint>
#include <type_traits>
#include <typeinfo>

#include <trellis/pipeline/channel_handler.hpp>

/// Which pipeline events a handler overrides: one bit per event, worked out from its type.
namespace trellis::handler_mask {

// One bit per event that walks the pipeline.
inline constexpr std::uint32_t kExceptionCaught = 1u << 0;      ///< exception_caught
inline constexpr std::uint32_t kChannelRegistered = 1u << 1;    ///< channel_registered
inline constexpr std::uint32_t kChannelUnregistered = 1u << 2;  ///< channel_unregistered
inline constexpr std::uint32_t kChannelActive = 1u << 3;        ///< channel_active
inline constexpr std::uint32_t kChannelInactive = 1u << 4;      ///< channel_inactive
inline constexpr std::uint32_t kChannelRead = 1u << 5;          ///< channel_read
inline constexpr std::uint32_t kChannelReadComplete = 1u << 6;  ///< channel_read_complete
inline constexpr std::uint32_t kUserEventTriggered = 1u << 7;   ///< user_event_triggered
/// channel_writability_changed
inline constexpr std::uint32_t kChannelWritabilityChanged = 1u << 8;
inline constexpr std::uint32_t kBind = 1u << 9;             ///< bind
inline constexpr std::uint32_t kConnect = 1u << 10;         ///< connect
inline constexpr std::uint32_t kDisconnect = 1u << 11;      ///< disconnect
inline constexpr std::uint32_t kClose = 1u << 12;           ///< close
inline constexpr std::uint32_t kRead = 1u << 13;            ///< read
inline constexpr std::uint32_t kWrite = 1u << 14;           ///< write
inline constexpr std::uint32_t kFlush = 1u << 15;           ///< flush
inline constexpr std::uint32_t kShutdownOutput = 1u << 16;  ///< shutdown_output

/// Every inbound event (exception_caught travels inbound).
inline constexpr std::uint32_t kInbound = (1u << 9) - 1;
/// Every outbound operation.
inline constexpr std::uint32_t kOutbound = ((1u << 17) - 1) & ~kInbound;
/// Every event and operation.
inline constexpr std::uint32_t kAll = kInbound | kOutbound;

namespace detail {

// True when H takes member `name` unchanged from Base (the type of &H::name names the class that
// declares it). A member that cannot be named from here (overloaded, private) counts as
// overridden: the handler is then called, as it would be without masks.
#define TRELLIS_HANDLER_INHERITS(name, Base)                            \
  template <class H>                                                    \
  concept inherits_##name = requires {                                  \
    requires std::is_same_v<decltype(&H::name), decltype(&Base::name)>; \
  };
TRELLIS_HANDLER_INHERITS(exception_caught, ChannelHandler)
TRELLIS_HANDLER_INHERITS(channel_registered, ChannelInboundHandler)
TRELLIS_HANDLER_INHERITS(channel_unregistered, ChannelInboundHandler)
TRELLIS_HANDLER_INHERITS(channel_active, ChannelInboundHandler)
TRELLIS_HANDLER_INHERITS(channel_inactive, ChannelInboundHandler)
TRELLIS_HANDLER_INHERITS(channel_read, ChannelInboundHandler)
TRELLIS_HANDLER_INHERITS(channel_read_complete, ChannelInboundHandler)
TRELLIS_HANDLER_INHERITS(user_event_triggered, ChannelInboundHandler)
TRELLIS_HANDLER_INHERITS(channel_writability_changed, ChannelInboundHandler)
TRELLIS_HANDLER_INHERITS(bind, ChannelOutboundHandler)
TRELLIS_HANDLER_INHERITS(connect, ChannelOutboundHandler)
TRELLIS_HANDLER_INHERITS(disconnect, ChannelOutboundHandler)
TRELLIS_HANDLER_INHERITS(close, ChannelOutboundHandler)
TRELLIS_HANDLER_INHERITS(read, ChannelOutboundHandler)
TRELLIS_HANDLER_INHERITS(write, ChannelOutboundHandler)
TRELLIS_HANDLER_INHERITS(flush, ChannelOutboundHandler)
TRELLIS_HANDLER_INHERITS(shutdown_output, ChannelOutboundHandler)
#undef TRELLIS_HANDLER_INHERITS

}  // namespace detail

/// The events a handler of exactly type H overrides (computed at compile time).
template <class H>
constexpr std::uint32_t of() noexcept {
  static_assert(std::is_base_of_v<ChannelHandler, H>);
  std::uint32_t m = 0;
  if constexpr (std::is_base_of_v<ChannelInboundHandler, H>) {
    if (!detail::inherits_exception_caught<H>) m |= kExceptionCaught;
    if (!detail::inherits_channel_registered<H>) m |= kChannelRegistered;
    if (!detail::inherits_channel_unregistered<H>) m |= kChannelUnregistered;
    if (!detail::inherits_channel_active<H>) m |= kChannelActive;
    if (!detail::inherits_channel_inactive<H>) m |= kChannelInactive;
    if (!detail::inherits_channel_read<H>) m |= kChannelRead;
    if (!detail::inherits_channel_read_complete<H>) m |= kChannelReadComplete;
    if (!detail::inherits_user_event_triggered<H>) m |= kUserEventTriggered;
    if (!detail::inherits_channel_writability_changed<H>) m |= kChannelWritabilityChanged;
  }
  if constexpr (std::is_base_of_v<ChannelOutboundHandler, H>) {
    if (!detail::inherits_bind<H>) m |= kBind;
    if (!detail::inherits_connect<H>) m |= kConnect;
    if (!detail::inherits_disconnect<H>) m |= kDisconnect;
    if (!detail::inherits_close<H>) m |= kClose;
    if (!detail::inherits_read<H>) m |= kRead;
    if (!detail::inherits_write<H>) m |= kWrite;
    if (!detail::inherits_flush<H>) m |= kFlush;
    if (!detail::inherits_shutdown_output<H>) m |= kShutdownOutput;
  }
  return m;
}

/// The mask of handler, known by its static type H: of<H>() when its dynamic type is H, every
/// event otherwise (a class derived from H may override more than H does).
template <class H>
std::uint32_t for_handler(const H& handler) noexcept {
  if constexpr (std::is_final_v<H>) {
    return of<H>();
  } else {
    return typeid(handler) == typeid(H) ? of<H>() : kAll;
  }
}

}  // namespace trellis::handler_mask
