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

// A pipeline could not be changed as asked (duplicate name, unknown name, handler already in a
// pipeline, handler_added threw, ...).
class ChannelPipelineError : public Error {
 public:
  using Error::Error;
};

/// A handler type more derived than ChannelHandler: its mask can be computed (handler_mask::of).
template <class H>
concept TypedChannelHandler =
    std::is_base_of_v<ChannelHandler, H> && !std::is_same_v<H, ChannelHandler>;

class ChannelPipeline {
 public:
  explicit ChannelPipeline(Channel& channel);
  ~ChannelPipeline();
  ChannelPipeline(const ChannelPipeline&) = delete;
  ChannelPipeline& operator=(const ChannelPipeline&) = delete;

  // Modifications run on the channel's event loop, or on any thread before the channel is
  // registered (otherwise IllegalStateError). Names are unique within a pipeline (an empty name
  // gets a generated one); a duplicate name throws ChannelPipelineError, as does adding a
  // non-sharable handler that already sits in a pipeline. handler_added runs before these
  // return.
  ChannelPipeline& add_first(std::string name, std::shared_ptr<ChannelHandler> handler);
  ChannelPipeline& add_last(std::string name, std::shared_ptr<ChannelHandler> handler);
  ChannelPipeline& add_first(std::shared_ptr<ChannelHandler> handler) {
    return add_first({}, std::move(handler));
  }
  ChannelPipeline& add_last(std::shared_ptr<ChannelHandler> handler) {
    return add_last({}, std::move(handler));
  }
  ChannelPipeline& add_before(std::string_view base_name, std::string name,
                              std::shared_ptr<ChannelHandler> handler);
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

  // Remove and return the handler (ChannelPipelineError when absent). handler_removed runs
  // before they return; an event the handler is handling right now continues past it.
  std::shared_ptr<ChannelHandler> remove(std::string_view name);
  std::shared_ptr<ChannelHandler> remove(const ChannelHandler& handler);
  std::shared_ptr<ChannelHandler> remove_first();
  std::shared_ptr<ChannelHandler> remove_last();
  // Puts handler (named new_name) where old_name was and returns the old handler. An event in
  // flight at the old handler continues through the new one.
  std::shared_ptr<ChannelHandler> replace(std::string_view old_name, std::string new_name,
                                          std::shared_ptr<ChannelHandler> handler);
  /// The same, with the handler's mask taken from its type H (see add_last).
  template <class H>
  requires TypedChannelHandler<H> std::shared_ptr<ChannelHandler> replace(
      std::string_view old_name, std::string new_name, std::shared_ptr<H> handler) {
    const std::uint32_t mask = handler_mask::for_handler(*handler);
    return replace_context(old_name, std::move(new_name), std::move(handler), mask);
  }

  // nullptr when absent.
  std::shared_ptr<ChannelHandler> get(std::string_view name) const;
  template <class T>
  std::shared_ptr<T> get(std::string_view name) const {
    return std::dynamic_pointer_cast<T>(get(name));
  }
  ChannelHandlerContext* context(std::string_view name) const noexcept;
  ChannelHandlerContext* context(const ChannelHandler& handler) const noexcept;
  std::shared_ptr<ChannelHandler> first() const;
  std::shared_ptr<ChannelHandler> last() const;
  // Names of the user handlers, head to tail.
  std::vector<std::string> names() const;
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  Channel& channel() const noexcept { return *channel_; }

  // Inbound events, entering at the head. From another thread they are posted to the loop.
  ChannelPipeline& fire_channel_registered();
  ChannelPipeline& fire_channel_unregistered();
  ChannelPipeline& fire_channel_active();
  ChannelPipeline& fire_channel_inactive();
  ChannelPipeline& fire_channel_read(Message&& msg);
  ChannelPipeline& fire_channel_read_complete();
  ChannelPipeline& fire_user_event_triggered(Message&& event);
  ChannelPipeline& fire_channel_writability_changed();
  ChannelPipeline& fire_exception_caught(std::exception_ptr error);

  // Outbound operations, entering at the tail.
  void bind(const SocketAddress& local, ChannelPromise promise = {});
  void connect(const SocketAddress& remote, ChannelPromise promise = {});
  void connect(const SocketAddress& remote, const std::optional<SocketAddress>& local,
               ChannelPromise promise = {});
  void disconnect(ChannelPromise promise = {});
  void close(ChannelPromise promise = {});
  void read();
  void write(Message&& msg, ChannelPromise promise = {});
  void flush();
  void write_and_flush(Message&& msg, ChannelPromise promise = {});

  // Removes every user handler, tail first (handler_removed runs for each). Called when a
  // closed channel is unregistered, so handlers free what they hold.
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
