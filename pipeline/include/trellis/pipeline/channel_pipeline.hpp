// ChannelPipeline: the doubly linked chain of handler contexts of one channel, between a head
// (which hands outbound operations to the transport) and a tail (which logs and drops what no
// handler consumed). Handlers are added, removed and replaced by name at run time, also from
// inside their own callbacks.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/error.hpp>

namespace trellis {

/// A pipeline could not be changed as asked (duplicate name, unknown name, handler already in a
/// pipeline, handler_added threw, ...).
class ChannelPipelineError : public Error {
 public:
  using Error::Error;
};

/// A handler type more derived than ChannelHandler: its mask can be computed (handler_mask::of).
template <class H>
concept TypedChannelHandler =
    std::is_base_of_v<ChannelHandler, H> && !std::is_same_v<H, ChannelHandler>;

/// The chain of handlers of one channel, between a head (which hands outbound operations to the
/// transport) and a tail (which hands what no handler consumed to the channel: logged and
/// dropped by default). Inbound events enter at the head and go towards the tail; outbound
/// operations enter at the tail and go towards the head. Every Channel owns one
/// (`channel.pipeline()`).
///
/// Threading: changes (`add_*`, `remove*`, `replace`) run on the channel's event loop, or on any
/// thread before the channel is registered; elsewhere they throw IllegalStateError. They may be
/// made from inside a callback of the same pipeline. The lookups are meant for the same threads.
/// `fire_*` and the outbound operations may be called from any thread: off the loop they are
/// posted to it.
///
/// Errors: changes throw ChannelPipelineError when they cannot be made as asked (see each).
class ChannelPipeline {
 public:
  /// Internal: a Channel makes its own pipeline.
  explicit ChannelPipeline(Channel& channel);
  /// Internal: destroyed with its channel. Frees every context; operations still posted to the
  /// loop for it do not run (their promises fail with ClosedChannelError).
  ~ChannelPipeline();
  ChannelPipeline(const ChannelPipeline&) = delete;
  ChannelPipeline& operator=(const ChannelPipeline&) = delete;

  /// @name Adding handlers
  /// Modifications run on the channel's event loop, or on any thread before the channel is
  /// registered (otherwise IllegalStateError). Names are unique within a pipeline (an empty name
  /// gets a generated one, `handler#N`; `head` and `tail` are reserved); a duplicate name throws
  /// ChannelPipelineError, as does adding a non-sharable handler that already sits in a
  /// pipeline. A null handler throws InvalidArgumentError. `handler_added` runs before these
  /// return. Each returns the pipeline, for chaining.
  ///@{
  /// Adds `handler` first, right after the head (it sees inbound events first).
  ChannelPipeline& add_first(std::string name, std::shared_ptr<ChannelHandler> handler);
  /// Adds `handler` last, right before the tail (it sees outbound operations first).
  ChannelPipeline& add_last(std::string name, std::shared_ptr<ChannelHandler> handler);
  /// add_first() with a generated name.
  ChannelPipeline& add_first(std::shared_ptr<ChannelHandler> handler) {
    return add_first({}, std::move(handler));
  }
  /// add_last() with a generated name.
  ChannelPipeline& add_last(std::shared_ptr<ChannelHandler> handler) {
    return add_last({}, std::move(handler));
  }
  /// Adds `handler` right before the handler named `base_name` (ChannelPipelineError when there
  /// is none).
  ChannelPipeline& add_before(std::string_view base_name, std::string name,
                              std::shared_ptr<ChannelHandler> handler);
  /// Adds `handler` right after the handler named `base_name` (ChannelPipelineError when there
  /// is none).
  ChannelPipeline& add_after(std::string_view base_name, std::string name,
                             std::shared_ptr<ChannelHandler> handler);
  /// The same, for a handler passed as its own type H (`std::make_shared<MyHandler>()`): events
  /// that H does not override (handler_mask::of) then pass it by instead of being handed on by
  /// the default implementations. A handler passed as a base type takes every event.
  template <class H>
  requires TypedChannelHandler<H> ChannelPipeline& add_first(std::string name,
                                                             std::shared_ptr<H> handler) {
    const std::uint32_t mask = handler_mask::for_handler(*handler);
    return insert(Where::kFirst, {}, std::move(name), std::move(handler), mask);
  }
  template <class H>
  requires TypedChannelHandler<H> ChannelPipeline& add_last(std::string name,
                                                            std::shared_ptr<H> handler) {
    const std::uint32_t mask = handler_mask::for_handler(*handler);
    return insert(Where::kLast, {}, std::move(name), std::move(handler), mask);
  }
  template <class H>
  requires TypedChannelHandler<H> ChannelPipeline& add_first(std::shared_ptr<H> handler) {
    return add_first(std::string(), std::move(handler));
  }
  template <class H>
  requires TypedChannelHandler<H> ChannelPipeline& add_last(std::shared_ptr<H> handler) {
    return add_last(std::string(), std::move(handler));
  }
  template <class H>
  requires TypedChannelHandler<H> ChannelPipeline& add_before(std::string_view base_name,
                                                              std::string name,
                                                              std::shared_ptr<H> handler) {
    const std::uint32_t mask = handler_mask::for_handler(*handler);
    return insert(Where::kBefore, base_name, std::move(name), std::move(handler), mask);
  }
  template <class H>
  requires TypedChannelHandler<H> ChannelPipeline& add_after(std::string_view base_name,
                                                             std::string name,
                                                             std::shared_ptr<H> handler) {
    const std::uint32_t mask = handler_mask::for_handler(*handler);
    return insert(Where::kAfter, base_name, std::move(name), std::move(handler), mask);
  }
  ///@}

  /// @name Removing handlers
  /// Remove and return the handler (ChannelPipelineError when absent, or when the pipeline is
  /// empty). Same threads as the `add_*` functions. `handler_removed` runs before they return;
  /// an event the handler is handling right now continues past it.
  ///@{
  /// Removes the handler named `name`.
  std::shared_ptr<ChannelHandler> remove(std::string_view name);
  /// Removes `handler`.
  std::shared_ptr<ChannelHandler> remove(const ChannelHandler& handler);
  /// Removes the first handler (the one after the head).
  std::shared_ptr<ChannelHandler> remove_first();
  /// Removes the last handler (the one before the tail).
  std::shared_ptr<ChannelHandler> remove_last();
  ///@}
  /// Puts `handler` (named `new_name`) where `old_name` was and returns the old handler. An event
  /// in flight at the old handler continues through the new one. `handler_added` of the new
  /// handler runs before `handler_removed` of the old one. Throws as the `add_*` and `remove`
  /// functions do.
  std::shared_ptr<ChannelHandler> replace(std::string_view old_name, std::string new_name,
                                          std::shared_ptr<ChannelHandler> handler);
  /// The same, with the handler's mask taken from its type H (see add_last).
  template <class H>
  requires TypedChannelHandler<H> std::shared_ptr<ChannelHandler> replace(
      std::string_view old_name, std::string new_name, std::shared_ptr<H> handler) {
    const std::uint32_t mask = handler_mask::for_handler(*handler);
    return replace_context(old_name, std::move(new_name), std::move(handler), mask);
  }

  /// The handler named `name`, or nullptr when absent.
  std::shared_ptr<ChannelHandler> get(std::string_view name) const;
  /// The handler named `name` as a `T`, or nullptr when absent or of another type.
  template <class T>
  std::shared_ptr<T> get(std::string_view name) const {
    return std::dynamic_pointer_cast<T>(get(name));
  }
  /// The context of the handler named `name`, or nullptr when absent.
  ChannelHandlerContext* context(std::string_view name) const noexcept;
  /// The context of `handler`, or nullptr when it is not in this pipeline.
  ChannelHandlerContext* context(const ChannelHandler& handler) const noexcept;
  /// The first handler (after the head), or nullptr when the pipeline is empty.
  std::shared_ptr<ChannelHandler> first() const;
  /// The last handler (before the tail), or nullptr when the pipeline is empty.
  std::shared_ptr<ChannelHandler> last() const;
  /// Names of the user handlers, head to tail.
  std::vector<std::string> names() const;
  /// Number of user handlers (the head and the tail are not counted).
  std::size_t size() const noexcept { return size_; }
  /// True when the pipeline holds no user handler.
  bool empty() const noexcept { return size_ == 0; }

  /// The channel this pipeline belongs to.
  Channel& channel() const noexcept { return *channel_; }

  /// @name Inbound events
  /// Fire an event into the pipeline at the head: the first inbound handler sees it. From
  /// another thread they are posted to the loop (and dropped if the pipeline is destroyed
  /// first). Each returns the pipeline, for chaining.
  ///@{
  /// Fires `channel_registered`.
  ChannelPipeline& fire_channel_registered();
  /// Fires `channel_unregistered`.
  ChannelPipeline& fire_channel_unregistered();
  /// Fires `channel_active`.
  ChannelPipeline& fire_channel_active();
  /// Fires `channel_inactive`, then cancels the tasks handlers started with
  /// ChannelHandlerContext::spawn.
  ChannelPipeline& fire_channel_inactive();
  /// Fires `channel_read` with `msg`.
  ChannelPipeline& fire_channel_read(Message&& msg);
  /// Fires `channel_read_complete`.
  ChannelPipeline& fire_channel_read_complete();
  /// Fires `user_event_triggered` with `event`.
  ChannelPipeline& fire_user_event_triggered(Message&& event);
  /// Fires `channel_writability_changed`.
  ChannelPipeline& fire_channel_writability_changed();
  /// Fires `exception_caught` with `error`.
  ChannelPipeline& fire_exception_caught(std::exception_ptr error);
  ///@}

  /// @name Outbound operations
  /// Start an operation at the tail: every outbound handler sees it (as ChannelHandlerContext's
  /// operations, with the same threading and errors). `channel.write(...)` and the other
  /// operations of Channel call these.
  ///@{
  /// Binds the channel to `local`.
  void bind(const SocketAddress& local, ChannelPromise promise = {});
  /// Connects the channel to `remote`.
  void connect(const SocketAddress& remote, ChannelPromise promise = {});
  /// Connects the channel to `remote`, from `local` when given.
  void connect(const SocketAddress& remote, const std::optional<SocketAddress>& local,
               ChannelPromise promise = {});
  /// Disconnects the channel (closes a channel that cannot disconnect).
  void disconnect(ChannelPromise promise = {});
  /// Closes the channel; the promise completes once it has closed.
  void close(ChannelPromise promise = {});
  /// Asks for more inbound data (meaningful with `auto_read` off).
  void read();
  /// Writes `msg` (sent at the next flush); the promise completes when it was written.
  void write(Message&& msg, ChannelPromise promise = {});
  /// Sends what was written so far.
  void flush();
  /// `write(msg, promise)` then `flush()`.
  void write_and_flush(Message&& msg, ChannelPromise promise = {});
  /// Shuts the output down (half-close); the promise completes once it is.
  void shutdown_output(ChannelPromise promise = {});
  ///@}

  /// Removes every user handler, tail first (`handler_removed` runs for each). Called when a
  /// closed channel is unregistered, so handlers free what they hold. Same threads as remove().
  void remove_all();

 private:
  friend class ChannelHandlerContext;
  struct Graveyard;

  enum class Where : std::uint8_t { kFirst, kLast, kBefore, kAfter };
  // Adds handler (taking the events in mask) at where (before or after base_name).
  ChannelPipeline& insert(Where where, std::string_view base_name, std::string name,
                          std::shared_ptr<ChannelHandler> handler, std::uint32_t mask);
  std::shared_ptr<ChannelHandler> replace_context(std::string_view old_name, std::string new_name,
                                                  std::shared_ptr<ChannelHandler> handler,
                                                  std::uint32_t mask);
  void check_modifiable() const;
  std::string check_name(std::string name);
  ChannelHandlerContext* find(std::string_view name) const noexcept;
  ChannelHandlerContext* find_or_throw(std::string_view name) const;
  ChannelHandlerContext* new_context(std::string name, std::shared_ptr<ChannelHandler> handler,
                                     std::uint32_t mask);
  void link_after(ChannelHandlerContext* prev, ChannelHandlerContext* ctx) noexcept;
  void call_handler_added(ChannelHandlerContext* ctx);
  std::shared_ptr<ChannelHandler> remove_context(ChannelHandlerContext* ctx);
  void call_handler_removed(ChannelHandlerContext* ctx);
  void bury(ChannelHandlerContext* ctx);
  // Tasks started by ctx.spawn: cancelled when the channel goes inactive.
  void add_spawned_task(Future<void> task);
  void cancel_spawned_tasks() noexcept;
  // Runs fn(head) on the channel's loop: inline when already there, else queued with the head
  // pinned, and dropped if the pipeline is destroyed before it runs.
  template <class Fn>
  void on_loop(Fn fn);

  Channel* channel_;
  ChannelHandlerContext* head_;
  ChannelHandlerContext* tail_;
  std::size_t size_ = 0;
  std::uint64_t generated_names_ = 0;
  std::shared_ptr<Graveyard> graveyard_;
  std::vector<Future<void>> spawned_tasks_;
  std::size_t spawned_prune_at_ = 16;
};

}  // namespace trellis
