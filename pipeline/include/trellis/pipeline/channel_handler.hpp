// The handler interfaces of a pipeline: ChannelHandler (life cycle and exceptions),
// ChannelInboundHandler (events from the transport towards the application),
// ChannelOutboundHandler (operations from the application towards the transport) and
// ChannelDuplexHandler (both). Every default passes the event on unchanged, so a handler
// overrides only what it cares about.
#pragma once

#include <atomic>
#include <exception>
#include <optional>

#include <trellis/pipeline/channel_promise.hpp>
#include <trellis/pipeline/message.hpp>
#include <trellis/pipeline/socket_address.hpp>

namespace trellis {

class ChannelHandlerContext;
class ChannelInboundHandler;
class ChannelOutboundHandler;

class ChannelHandler {
 public:
  ChannelHandler() = default;
  ChannelHandler(const ChannelHandler&) = delete;
  ChannelHandler& operator=(const ChannelHandler&) = delete;
  virtual ~ChannelHandler() = default;

  // Called once the handler is in a pipeline (on the channel's event loop), and after it left it.
  virtual void handler_added(ChannelHandlerContext& ctx);
  virtual void handler_removed(ChannelHandlerContext& ctx);
  // An exception thrown by a handler before this one (or fired by it). Default: pass it on.
  virtual void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error);

  // A sharable handler may sit in several pipelines at once (it keeps no per-channel state, or
  // guards it). Adding a non-sharable handler to a second pipeline is refused.
  virtual bool is_sharable() const noexcept { return false; }

  // Which sides the handler takes part in; the pipeline asks once, when the handler is added.
  virtual ChannelInboundHandler* as_inbound() noexcept { return nullptr; }
  virtual ChannelOutboundHandler* as_outbound() noexcept { return nullptr; }

 private:
  friend class ChannelPipeline;
  std::atomic<bool> added_{false};
};

// Events flowing from the head (transport) to the tail (application end) of the pipeline.
class ChannelInboundHandler : public virtual ChannelHandler {
 public:
  virtual void channel_registered(ChannelHandlerContext& ctx);
  virtual void channel_unregistered(ChannelHandlerContext& ctx);
  virtual void channel_active(ChannelHandlerContext& ctx);
  virtual void channel_inactive(ChannelHandlerContext& ctx);
  virtual void channel_read(ChannelHandlerContext& ctx, Message msg);
  virtual void channel_read_complete(ChannelHandlerContext& ctx);
  virtual void user_event_triggered(ChannelHandlerContext& ctx, Message event);
  virtual void channel_writability_changed(ChannelHandlerContext& ctx);

  ChannelInboundHandler* as_inbound() noexcept override { return this; }
};

// Operations flowing from the tail towards the head, which hands them to the transport.
// A handler that completes, drops or replaces an operation is responsible for its promise.
class ChannelOutboundHandler : public virtual ChannelHandler {
 public:
  virtual void bind(ChannelHandlerContext& ctx, const SocketAddress& local, ChannelPromise promise);
  virtual void connect(ChannelHandlerContext& ctx, const SocketAddress& remote,
                       const std::optional<SocketAddress>& local, ChannelPromise promise);
  virtual void disconnect(ChannelHandlerContext& ctx, ChannelPromise promise);
  virtual void close(ChannelHandlerContext& ctx, ChannelPromise promise);
  virtual void read(ChannelHandlerContext& ctx);
  virtual void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise);
  virtual void flush(ChannelHandlerContext& ctx);

  ChannelOutboundHandler* as_outbound() noexcept override { return this; }
};

// Both directions (codecs, idle detectors, ...).
class ChannelDuplexHandler : public ChannelInboundHandler, public ChannelOutboundHandler {};

}  // namespace trellis
