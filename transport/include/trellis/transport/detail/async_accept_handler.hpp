// The handler behind AsyncServerChannel: the last handler of the server pipeline. It sets up each
// accepted child (child options, child handler, an AsyncChannel made on the child's loop) and
// queues the children for accept(), in accept order, with watermark back-pressure on auto_read.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>

#include <trellis/pipeline/async_channel.hpp>
#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/message.hpp>
#include <trellis/transport/async_server_channel_options.hpp>
#include <trellis/transport/channel_option.hpp>

namespace trellis {

namespace detail {

// Wraps a registered child (its child handler in place) in an AsyncChannel<In, Out> on the
// child's loop and returns it boxed in a Message.
using AsyncChildWrapper = std::function<Message(Channel&)>;

class AsyncAcceptHandler final : public ChannelInboundHandler,
                                 public std::enable_shared_from_this<AsyncAcceptHandler> {
 public:
  AsyncAcceptHandler(ChannelOptions child_options, std::shared_ptr<ChannelHandler> child_handler,
                     AsyncChildWrapper wrap, AsyncServerChannelOptions options);
  ~AsyncAcceptHandler() override;

  // --- On the server channel's loop. -----------------------------------------------------
  // A child is ready, or the stream ended (server closed and no child is still being set up).
  bool has_event() const noexcept { return !ready_.empty() || (closed_ && in_flight_ == 0); }
  // The next child's boxed AsyncChannel, nullopt at the end. Accepts again below the low mark.
  std::optional<Message> take();
  // One task at a time waits in accept() (IllegalStateError for a second one).
  void set_waiter(std::coroutine_handle<> h, EventExecutor* executor, bool& refused);
  void clear_waiter() noexcept { waiter_ = {}; }
  // The AsyncServerChannel went away: closes the server channel and every child not taken.
  void abandon() noexcept;
  // IllegalStateError unless called on the server channel's loop.
  void check_on_loop(const char* what) const;

  // --- From any thread (snapshots). -------------------------------------------------------
  // Children ready for accept(), and those accepted but still being set up on their loops.
  std::size_t buffered() const noexcept { return buffered_.load(std::memory_order_relaxed); }
  std::size_t in_flight() const noexcept {
    return in_flight_count_.load(std::memory_order_relaxed);
  }
  // True while back-pressure has stopped the server channel accepting.
  bool accepting_paused() const noexcept { return paused_.load(std::memory_order_relaxed); }

  void handler_added(ChannelHandlerContext& ctx) override;
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  void channel_inactive(ChannelHandlerContext& ctx) override;

 private:
  // A child on its way from its loop back to the server loop; closes the child if it never
  // arrives (the server loop refused the work) or arrives after abandon().
  struct Arrival {
    std::uint64_t seq = 0;
    std::shared_ptr<Channel> child;
    std::optional<Message> wrapped;  // empty: registration or wrapping failed
    ~Arrival();
  };
  struct Slot {
    bool arrived = false;
    std::shared_ptr<Channel> child;
    std::optional<Message> wrapped;
  };
  struct Ready {
    std::shared_ptr<Channel> child;
    Message wrapped;
  };

  void arrive(std::unique_ptr<Arrival> arrival);
  void update_counts() noexcept;
  void pause_if_full();
  void wake_waiter() noexcept;

  std::shared_ptr<const ChannelOptions> child_options_;
  std::shared_ptr<ChannelHandler> child_handler_;
  AsyncChildWrapper wrap_;
  AsyncServerChannelOptions options_;
  Channel* server_ = nullptr;
  // Accepted children being set up, by accept order: slots_[0] is sequence number base_seq_.
  std::deque<Slot> slots_;
  std::uint64_t base_seq_ = 0;
  std::uint64_t next_seq_ = 0;
  std::size_t in_flight_ = 0;
  std::deque<Ready> ready_;
  std::coroutine_handle<> waiter_;
  EventExecutor* waiter_executor_ = nullptr;
  bool* waiter_refused_ = nullptr;
  bool closed_ = false;
  bool abandoned_ = false;
  std::atomic<std::size_t> buffered_{0};
  std::atomic<std::size_t> in_flight_count_{0};
  std::atomic<bool> paused_{false};
};

}  // namespace detail
}  // namespace trellis
