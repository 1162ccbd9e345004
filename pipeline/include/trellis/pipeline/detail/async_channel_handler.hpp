// The handler behind AsyncChannel: it sits at the tail of the pipeline, buffers what reaches it
// for the awaiting reader (with watermark back-pressure on auto_read), and wakes writers that
// wait for the channel to become writable.
#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <string_view>

#include <trellis/pipeline/async_channel_options.hpp>
#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/detail/ring_buffer.hpp>
#include <trellis/pipeline/message.hpp>
#include <trellis/pipeline/task.hpp>

namespace trellis {

class Channel;

namespace detail {

// An exception that reached the tail, queued in order with the messages.
struct InboundFailure {
  std::exception_ptr error;
};

// A task waiting for the channel to become writable (an AsyncChannel write); intrusive FIFO.
class WritableWaiter {
 public:
  // The channel is writable again (or closed, or the AsyncChannel went away): go on.
  virtual void on_writable() noexcept = 0;

 protected:
  ~WritableWaiter() = default;

 private:
  friend class AsyncChannelHandler;
  WritableWaiter* next_ = nullptr;
};

class AsyncChannelHandler final : public ChannelInboundHandler {
 public:
  AsyncChannelHandler(Channel& channel, AsyncChannelOptions options) noexcept
      : channel_(&channel), options_(options) {}

  Channel& channel() const noexcept { return *channel_; }
  const AsyncChannelOptions& options() const noexcept { return options_; }
  // Messages (and exceptions) waiting for the reader.
  std::size_t buffered() const noexcept { return buffer_.size(); }
  // True once the inbound stream ended (channel inactive, input shut down, or handler removed).
  bool ended() const noexcept { return ended_; }
  bool has_event() const noexcept { return !buffer_.empty() || ended_; }
  // True while the handler is in its pipeline.
  bool attached() const noexcept { return ctx_ != nullptr; }
  // True while reading is paused by back-pressure.
  bool reading_paused() const noexcept { return paused_; }

  // The next message, nullopt at the end of the stream; a queued exception is thrown. Resumes
  // reading when the buffer fell below the low watermark.
  std::optional<Message> take();

  // One reader at a time waits for an event (IllegalStateError for a second one).
  void set_reader(std::coroutine_handle<> h, EventExecutor* executor, bool& refused);
  void clear_reader() noexcept { reader_ = {}; }

  // Writers wait while the channel is open and unwritable.
  bool must_wait_writable() const noexcept;
  void add_writer(WritableWaiter* w) noexcept;
  void remove_writer(WritableWaiter* w) noexcept;

  // Leaves the pipeline (the AsyncChannel went away); on the channel's loop.
  void detach();
  // IllegalStateError unless called on the channel's event loop.
  void check_on_loop(const char* what) const;

  void handler_added(ChannelHandlerContext& ctx) override;
  void handler_removed(ChannelHandlerContext& ctx) override;
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  void channel_inactive(ChannelHandlerContext& ctx) override;
  void user_event_triggered(ChannelHandlerContext& ctx, Message event) override;
  void channel_writability_changed(ChannelHandlerContext& ctx) override;
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) override;

 private:
  void push(Message&& msg);
  void end_stream() noexcept;
  void wake_reader() noexcept;
  void wake_writers() noexcept;

  Channel* channel_;
  AsyncChannelOptions options_;
  ChannelHandlerContext* ctx_ = nullptr;
  RingBuffer<Message> buffer_;
  std::coroutine_handle<> reader_;
  EventExecutor* reader_executor_ = nullptr;
  bool* reader_refused_ = nullptr;
  WritableWaiter* writers_head_ = nullptr;
  WritableWaiter* writers_tail_ = nullptr;
  bool ended_ = false;
  bool paused_ = false;
};

// Puts an AsyncChannelHandler at the tail of channel's pipeline (on its loop, else
// IllegalStateError) and turns auto_read on: from now on the handler paces the reads.
std::shared_ptr<AsyncChannelHandler> install_async_channel_handler(Channel& channel,
                                                                   AsyncChannelOptions options);
[[noreturn]] void throw_async_wrong_type(std::string_view wanted, std::string_view held);

}  // namespace detail
}  // namespace trellis
