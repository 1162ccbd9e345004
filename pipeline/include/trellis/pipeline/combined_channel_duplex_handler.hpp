// CombinedChannelDuplexHandler<In, Out>: one duplex handler made of an inbound handler and an
// outbound handler (Netty's CombinedChannelDuplexHandler). Each event goes to the half that
// handles it; either half can be removed on its own, after which its events pass by.
#pragma once

#include <exception>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/pipeline/detail/combined_handler_layers.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/event_executor.hpp>

namespace trellis {

/// One handler that owns an inbound handler (In) and an outbound handler (Out) and forwards each
/// event to the half that takes it: inbound events and exception_caught to In, outbound
/// operations to Out; handler_added and handler_removed reach both (In first). The halves are
/// members, built with the combined handler; they behave as they would as two neighbouring
/// handlers at this place in the pipeline. The base of codecs made of a decoder and an encoder
/// (ByteToMessageCodec, MessageToMessageCodec, HttpClientCodec).
///
/// Each half is called with the combined handler's own context: what it fires goes to the
/// handler after this one, what it writes (or closes...) goes to the handler before it, so its
/// events and operations go where Netty's delegating contexts send them. `ctx.handler()` is the
/// combined handler (as in Netty); `ctx.is_removed()` says whether the combined handler was
/// removed, not whether the half was. An exception the inbound half fires goes to the next
/// handler (an outbound handler never sees exception_caught in this pipeline).
///
/// The combined handler overrides exactly the events its halves override (see handler_mask):
/// an event neither half handles passes it by, so combining adds no hop to the pipeline. A
/// subclass that overrides an event calls the base's version to reach the half. The halves'
/// callbacks must be public (they are called directly, without a virtual call).
///
/// remove_inbound_handler() and remove_outbound_handler() let one half go (its handler_removed
/// runs at once); from then on the events it took pass on unchanged, as if it were not there.
///
/// Threading: as any handler, on the channel's loop. Not sharable (the halves hold per-channel
/// state). Errors: an exception a half throws from a callback is handled as if the combined
/// handler threw it; one thrown by a half's handler_removed is fired as a ChannelPipelineError
/// (the original nested), the other half is removed all the same.
template <class In, class Out>
class CombinedChannelDuplexHandler : public detail::CombinedLayers<In, Out> {
  static_assert(std::is_base_of_v<ChannelInboundHandler, In> &&
                    !std::is_base_of_v<ChannelOutboundHandler, In>,
                "In must be an inbound handler and not an outbound one");
  static_assert(std::is_base_of_v<ChannelOutboundHandler, Out> &&
                    !std::is_base_of_v<ChannelInboundHandler, Out>,
                "Out must be an outbound handler and not an inbound one");

  using Layers = detail::CombinedLayers<In, Out>;

 public:
  /// Both halves default-constructed.
  CombinedChannelDuplexHandler() = default;
  /// Each half constructed from its tuple of arguments:
  /// `Base(std::piecewise_construct, std::forward_as_tuple(limits), std::tuple<>())`.
  template <class... InArgs, class... OutArgs>
  CombinedChannelDuplexHandler(std::piecewise_construct_t /*tag*/, std::tuple<InArgs...> in_args,
                               std::tuple<OutArgs...> out_args)
      : Layers(std::move(in_args), std::move(out_args)) {}

  /// Calls handler_added of the inbound half, then of the outbound half, also when the first
  /// threw (the exception thrown last propagates; the pipeline then removes the handler again).
  /// Both halves take part again when a removed handler is added anew.
  void handler_added(ChannelHandlerContext& ctx) override {
    ctx_ = &ctx;
    this->combined_in_removed_ = false;
    this->combined_out_removed_ = false;
    try {
      this->combined_in_.In::handler_added(ctx);
    } catch (...) {
      this->combined_out_.Out::handler_added(ctx);
      throw;
    }
    this->combined_out_.Out::handler_added(ctx);
  }

  /// Removes the halves still there: handler_removed of the inbound half, then of the outbound
  /// one.
  void handler_removed(ChannelHandlerContext& ctx) override {
    remove_inbound(ctx);
    remove_outbound(ctx);
    ctx_ = nullptr;
  }

  /// Lets the inbound half go: its handler_removed runs now, and from then on inbound events
  /// pass this handler by unchanged. Call on the channel's loop (or before the channel is
  /// registered) while the handler is in a pipeline, else IllegalStateError. Nothing happens
  /// when the half is gone already.
  void remove_inbound_handler() {
    check_removable();
    remove_inbound(*ctx_);
  }
  /// Lets the outbound half go: its handler_removed runs now, and from then on outbound
  /// operations pass this handler by unchanged. Same rules as remove_inbound_handler().
  void remove_outbound_handler() {
    check_removable();
    remove_outbound(*ctx_);
  }

  /// True once the inbound half was removed (or the whole handler was).
  bool is_inbound_handler_removed() const noexcept { return this->combined_in_removed_; }
  /// True once the outbound half was removed (or the whole handler was).
  bool is_outbound_handler_removed() const noexcept { return this->combined_out_removed_; }

 protected:
  /// The inbound half.
  In& inbound_handler() noexcept { return this->combined_in_; }
  /// The inbound half.
  const In& inbound_handler() const noexcept { return this->combined_in_; }
  /// The outbound half.
  Out& outbound_handler() noexcept { return this->combined_out_; }
  /// The outbound half.
  const Out& outbound_handler() const noexcept { return this->combined_out_; }

 private:
  void check_removable() const {
    if (ctx_ == nullptr) {
      throw IllegalStateError("CombinedChannelDuplexHandler: the handler is not in a pipeline");
    }
    if (ctx_->channel().is_registered() && !ctx_->executor().in_event_loop()) {
      throw IllegalStateError(
          "CombinedChannelDuplexHandler: a half is removed on the channel's event loop only");
    }
  }

  void remove_inbound(ChannelHandlerContext& ctx) noexcept {
    if (this->combined_in_removed_) return;
    this->combined_in_removed_ = true;
    try {
      this->combined_in_.In::handler_removed(ctx);
    } catch (...) {
      fire_removal_error(ctx, "inbound");
    }
  }
  void remove_outbound(ChannelHandlerContext& ctx) noexcept {
    if (this->combined_out_removed_) return;
    this->combined_out_removed_ = true;
    try {
      this->combined_out_.Out::handler_removed(ctx);
    } catch (...) {
      fire_removal_error(ctx, "outbound");
    }
  }
  // Called in a catch block: fires the exception being handled, nested in a ChannelPipelineError.
  static void fire_removal_error(ChannelHandlerContext& ctx, const char* half) noexcept {
    try {
      std::throw_with_nested(ChannelPipelineError(
          std::string("CombinedChannelDuplexHandler: handler_removed of the ") + half +
          " handler threw"));
    } catch (...) {
      ctx.fire_exception_caught(std::current_exception());
    }
  }

  ChannelHandlerContext* ctx_ = nullptr;  // while in a pipeline
};

}  // namespace trellis
