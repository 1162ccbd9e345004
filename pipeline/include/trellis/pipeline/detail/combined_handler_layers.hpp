// The inside of CombinedChannelDuplexHandler<In, Out>: its state (CombinedCore) and one layer per
// pipeline event that overrides the event only when the half that takes it (In for inbound
// events, Out for outbound ones) overrides it. So the combined handler's handler mask is the
// union of its halves' masks: an event neither half handles passes it by, as it passed by the
// two handlers on their own, and the combined handler adds no hop to the pipeline's walks.
// Each override calls its half with a qualified (non-virtual) call on the member.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>

#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/channel_handler_mask.hpp>

namespace trellis::detail {

// The two halves and whether each was removed. Kept apart from the layers so that every layer
// reaches them the same way.
template <class In, class Out>
class CombinedCore : public ChannelDuplexHandler {
 public:
  // The events the combined handler takes: those its halves override.
  static constexpr std::uint32_t kTaken = handler_mask::of<In>() | handler_mask::of<Out>();

 protected:
  CombinedCore() = default;
  template <class InArgs, class OutArgs>
  CombinedCore(InArgs&& in_args, OutArgs&& out_args)
      : combined_in_(std::make_from_tuple<In>(std::forward<InArgs>(in_args))),
        combined_out_(std::make_from_tuple<Out>(std::forward<OutArgs>(out_args))) {}

  In combined_in_;
  Out combined_out_;
  bool combined_in_removed_ = false;
  bool combined_out_removed_ = false;
};

// One layer per event: Layer<Base, false> adds nothing, Layer<Base, true> forwards the event to
// its half, or past the handler once that half was removed.
#define TRELLIS_COMBINED_LAYER(Layer, event_bit)                              \
  template <class Base, bool = (Base::kTaken & handler_mask::event_bit) != 0> \
  class Layer : public Base {                                                 \
   public:                                                                    \
    using Base::Base;                                                         \
  };
TRELLIS_COMBINED_LAYER(CombinedExceptionCaught, kExceptionCaught)
TRELLIS_COMBINED_LAYER(CombinedChannelRegistered, kChannelRegistered)
TRELLIS_COMBINED_LAYER(CombinedChannelUnregistered, kChannelUnregistered)
TRELLIS_COMBINED_LAYER(CombinedChannelActive, kChannelActive)
TRELLIS_COMBINED_LAYER(CombinedChannelInactive, kChannelInactive)
TRELLIS_COMBINED_LAYER(CombinedChannelRead, kChannelRead)
TRELLIS_COMBINED_LAYER(CombinedChannelReadComplete, kChannelReadComplete)
TRELLIS_COMBINED_LAYER(CombinedUserEventTriggered, kUserEventTriggered)
TRELLIS_COMBINED_LAYER(CombinedChannelWritabilityChanged, kChannelWritabilityChanged)
TRELLIS_COMBINED_LAYER(CombinedBind, kBind)
TRELLIS_COMBINED_LAYER(CombinedConnect, kConnect)
TRELLIS_COMBINED_LAYER(CombinedDisconnect, kDisconnect)
TRELLIS_COMBINED_LAYER(CombinedClose, kClose)
TRELLIS_COMBINED_LAYER(CombinedRead, kRead)
TRELLIS_COMBINED_LAYER(CombinedWrite, kWrite)
TRELLIS_COMBINED_LAYER(CombinedFlush, kFlush)
TRELLIS_COMBINED_LAYER(CombinedShutdownOutput, kShutdownOutput)
#undef TRELLIS_COMBINED_LAYER

// The taking layers. `half` is combined_in_ or combined_out_, H its type; `removed` its flag.
#define TRELLIS_COMBINED_TAKES(Layer, half, removed, name, params, args, pass) \
  template <class Base>                                                        \
  class Layer<Base, true> : public Base {                                      \
   public:                                                                     \
    using Base::Base;                                                          \
    void name params override {                                                \
      using H [[maybe_unused]] = decltype(this->half);                         \
      if (this->removed) [[unlikely]] {                                        \
        pass;                                                                  \
      } else {                                                                 \
        this->half.H::name args;                                               \
      }                                                                        \
    }                                                                          \
  };

TRELLIS_COMBINED_TAKES(CombinedExceptionCaught, combined_in_, combined_in_removed_,
                       exception_caught, (ChannelHandlerContext & ctx, std::exception_ptr error),
                       (ctx, std::move(error)), ctx.fire_exception_caught(std::move(error)))
TRELLIS_COMBINED_TAKES(CombinedChannelRegistered, combined_in_, combined_in_removed_,
                       channel_registered, (ChannelHandlerContext & ctx), (ctx),
                       ctx.fire_channel_registered())
TRELLIS_COMBINED_TAKES(CombinedChannelUnregistered, combined_in_, combined_in_removed_,
                       channel_unregistered, (ChannelHandlerContext & ctx), (ctx),
                       ctx.fire_channel_unregistered())
TRELLIS_COMBINED_TAKES(CombinedChannelActive, combined_in_, combined_in_removed_, channel_active,
                       (ChannelHandlerContext & ctx), (ctx), ctx.fire_channel_active())
TRELLIS_COMBINED_TAKES(CombinedChannelInactive, combined_in_, combined_in_removed_,
                       channel_inactive, (ChannelHandlerContext & ctx), (ctx),
                       ctx.fire_channel_inactive())
TRELLIS_COMBINED_TAKES(CombinedChannelRead, combined_in_, combined_in_removed_, channel_read,
                       (ChannelHandlerContext & ctx, Message msg), (ctx, std::move(msg)),
                       ctx.fire_channel_read(std::move(msg)))
TRELLIS_COMBINED_TAKES(CombinedChannelReadComplete, combined_in_, combined_in_removed_,
                       channel_read_complete, (ChannelHandlerContext & ctx), (ctx),
                       ctx.fire_channel_read_complete())
TRELLIS_COMBINED_TAKES(CombinedUserEventTriggered, combined_in_, combined_in_removed_,
                       user_event_triggered, (ChannelHandlerContext & ctx, Message event),
                       (ctx, std::move(event)), ctx.fire_user_event_triggered(std::move(event)))
TRELLIS_COMBINED_TAKES(CombinedChannelWritabilityChanged, combined_in_, combined_in_removed_,
                       channel_writability_changed, (ChannelHandlerContext & ctx), (ctx),
                       ctx.fire_channel_writability_changed())
TRELLIS_COMBINED_TAKES(CombinedBind, combined_out_, combined_out_removed_, bind,
                       (ChannelHandlerContext & ctx, const SocketAddress& local,
                        ChannelPromise promise),
                       (ctx, local, std::move(promise)), ctx.bind(local, std::move(promise)))
TRELLIS_COMBINED_TAKES(CombinedConnect, combined_out_, combined_out_removed_, connect,
                       (ChannelHandlerContext & ctx, const SocketAddress& remote,
                        const std::optional<SocketAddress>& local, ChannelPromise promise),
                       (ctx, remote, local, std::move(promise)),
                       ctx.connect(remote, local, std::move(promise)))
TRELLIS_COMBINED_TAKES(CombinedDisconnect, combined_out_, combined_out_removed_, disconnect,
                       (ChannelHandlerContext & ctx, ChannelPromise promise),
                       (ctx, std::move(promise)), ctx.disconnect(std::move(promise)))
TRELLIS_COMBINED_TAKES(CombinedClose, combined_out_, combined_out_removed_, close,
                       (ChannelHandlerContext & ctx, ChannelPromise promise),
                       (ctx, std::move(promise)), ctx.close(std::move(promise)))
TRELLIS_COMBINED_TAKES(CombinedRead, combined_out_, combined_out_removed_, read,
                       (ChannelHandlerContext & ctx), (ctx), ctx.read())
TRELLIS_COMBINED_TAKES(CombinedWrite, combined_out_, combined_out_removed_, write,
                       (ChannelHandlerContext & ctx, Message msg, ChannelPromise promise),
                       (ctx, std::move(msg), std::move(promise)),
                       ctx.write(std::move(msg), std::move(promise)))
TRELLIS_COMBINED_TAKES(CombinedFlush, combined_out_, combined_out_removed_, flush,
                       (ChannelHandlerContext & ctx), (ctx), ctx.flush())
TRELLIS_COMBINED_TAKES(CombinedShutdownOutput, combined_out_, combined_out_removed_,
                       shutdown_output, (ChannelHandlerContext & ctx, ChannelPromise promise),
                       (ctx, std::move(promise)), ctx.shutdown_output(std::move(promise)))
#undef TRELLIS_COMBINED_TAKES

// Every layer stacked on the core.
template <class In, class Out>
using CombinedLayers = CombinedShutdownOutput<
    CombinedFlush<CombinedWrite<CombinedRead<CombinedClose<CombinedDisconnect<
        CombinedConnect<CombinedBind<CombinedChannelWritabilityChanged<CombinedUserEventTriggered<
            CombinedChannelReadComplete<CombinedChannelRead<CombinedChannelInactive<
                CombinedChannelActive<CombinedChannelUnregistered<CombinedChannelRegistered<
                    CombinedExceptionCaught<CombinedCore<In, Out>>>>>>>>>>>>>>>>>>;

}  // namespace trellis::detail
