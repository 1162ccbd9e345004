// ChannelOutboundBuffer: a channel's queue of written messages waiting for the transport. Writes
// wait until flush, the pending byte count is held against the configured water marks (firing
// channel_writability_changed on crossing), promises complete in write order, and closing fails
// everything left with ClosedChannelError. Transports drain it through current()/remove() or,
// for a gathering write, to_iovecs() + remove_bytes(); a FileRegion is written in place and its
// progress reported with progress().
//
// Memory: the first queued message sits in the buffer itself; only more than one at a time
// take a heap ring, which is given back when the queue drains. Request/response traffic (one
// write per flush) thus allocates nothing, and an idle channel holds no ring. The ring's first
// array is recycled through a one-array spare per thread, so bursts of a few writes do not
// reach malloc either.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>

#include <trellis/pipeline/channel_promise.hpp>
#include <trellis/pipeline/detail/ring_buffer.hpp>
#include <trellis/pipeline/message.hpp>

namespace trellis {

class Channel;

/// A channel's queue of written messages waiting for the transport. Writes wait until
/// add_flush(); the pending byte count is held against the channel's water marks (firing
/// `channel_writability_changed` on crossing); promises complete in write order. Transports
/// drain it through current()/remove() or, for a gathering write, to_iovecs() + remove_bytes().
///
/// Threading: used on the channel's event loop only.
class ChannelOutboundBuffer {
 public:
  /// What a message that is neither a ByteBuf, a CompositeByteBuf, a FileRegion (its remaining
  /// bytes) nor a DatagramPacket (its content) counts for (Netty's value).
  static constexpr std::size_t kUnknownMessageSize = 8;

  /// An empty queue for `channel` (whose config gives the water marks).
  explicit ChannelOutboundBuffer(Channel& channel) noexcept : channel_(&channel) {}
  ChannelOutboundBuffer(const ChannelOutboundBuffer&) = delete;
  ChannelOutboundBuffer& operator=(const ChannelOutboundBuffer&) = delete;
  /// Fails whatever is still queued (normally close() did that already).
  ~ChannelOutboundBuffer();

  /// The bytes a message counts for against the water marks.
  static std::size_t message_size(const Message& msg) noexcept;

  /// @name Queueing
  ///@{

  /// Queues `msg` (not flushed yet), counting `size` bytes (by default message_size()) against
  /// the water marks; may make the channel unwritable.
  void add_message(Message&& msg, std::size_t size, ChannelPromise&& promise);
  void add_message(Message&& msg, ChannelPromise&& promise) {
    const auto size = message_size(msg);
    add_message(std::move(msg), size, std::move(promise));
  }
  ///@}

  /// Marks every queued message as flushed: the transport may write them now.
  void add_flush() noexcept { flushed_ = queued(); }

  /// The first flushed message, or nullptr.
  Message* current() noexcept { return flushed_ ? &entry(0).msg : nullptr; }
  /// @name Removing
  ///@{

  /// Drops the first flushed message and completes its promise (successfully, or with `error`).
  /// Returns false when nothing was flushed.
  bool remove();
  bool remove(std::exception_ptr error);
  ///@}

  /// After a (partial) gathering write of `written` bytes: consumes that many bytes from the
  /// flushed ByteBuf/CompositeByteBuf messages, removing (and completing) fully written ones.
  void remove_bytes(std::size_t written);
  /// After a partial write of the first flushed message (a FileRegion written with sendfile):
  /// `amount` of the bytes it counted for are gone, so they no longer count against the water
  /// marks (the channel may turn writable before the region is done). The message stays.
  void progress(std::size_t amount);
  /// Fills `out` with the readable byte runs of the flushed messages, up to `max_bytes` (at least
  /// one run when any), stopping at the first message that is not bytes. Returns the number of
  /// iovecs; `*bytes` receives their total length.
  std::size_t to_iovecs(std::span<struct iovec> out, std::size_t max_bytes,
                        std::size_t* bytes = nullptr);
  /// Calls `fn(Message&)` for each flushed message in order while it returns true.
  template <class Fn>
  void for_each_flushed_message(Fn&& fn) {
    for (std::size_t i = 0; i < flushed_; ++i) {
      if (!fn(entry(i).msg)) break;
    }
  }

  /// Flushed messages not yet removed.
  std::size_t size() const noexcept { return flushed_; }
  /// True when no flushed message is waiting.
  bool is_empty() const noexcept { return flushed_ == 0; }
  /// Messages written but not flushed yet.
  std::size_t unflushed_size() const noexcept { return queued() - flushed_; }
  /// The bytes queued (flushed or not), as counted against the water marks.
  std::size_t total_pending_write_bytes() const noexcept { return pending_bytes_; }

  /// True when neither the water marks nor the user-defined flag make the channel unwritable.
  bool is_writable() const noexcept { return unwritable_ == 0; }
  /// A writability flag the application (or a test simulating a slow peer) controls, combined
  /// with the water marks: the channel is writable only when both allow it.
  void set_user_defined_writability(bool writable);
  /// The flag set_user_defined_writability() set (true by default).
  bool user_defined_writability() const noexcept { return (unwritable_ & kUserBit) == 0; }
  /// Bytes that can still be queued before the channel turns unwritable (0 when unwritable).
  std::size_t bytes_before_unwritable() const noexcept;
  /// Bytes to drain before the channel turns writable again (0 when writable).
  std::size_t bytes_before_writable() const noexcept;

  /// Fails the flushed messages (not the unflushed ones) with `error`; fires a writability change
  /// when `notify_writability` and the pending bytes drop below the low water mark.
  void fail_flushed(std::exception_ptr error, bool notify_writability);
  /// Fails every message, flushed or not, in order. Writability changes are not fired.
  void close(std::exception_ptr error);

  /// The number of messages the heap ring has room for: 0 while at most one message is queued
  /// at a time, and again once the queue has drained (for tests).
  std::size_t ring_capacity() const noexcept { return rest_.capacity(); }

 private:
  static constexpr std::uint32_t kWaterMarkBit = 1;
  static constexpr std::uint32_t kUserBit = 2;

  struct Entry {
    Message msg;
    ChannelPromise promise;
    std::size_t size;
  };
  // Takes the ring's smallest array from (and returns it to) a spare kept per thread.
  struct RingAllocator {
    using value_type = Entry;
    Entry* allocate(std::size_t n);
    void deallocate(Entry* p, std::size_t n) noexcept;
  };

  // The queue is first_ (when engaged) followed by rest_.
  std::size_t queued() const noexcept { return (first_ ? 1 : 0) + rest_.size(); }
  Entry& entry(std::size_t i) noexcept {
    if (first_) {
      if (i == 0) return *first_;
      --i;
    }
    return rest_[i];
  }
  void push_entry(Entry&& e);
  void drop_front() noexcept;  // destroys entry(0)

  void increment_pending(std::size_t size);
  void decrement_pending(std::size_t size, bool notify);
  void set_unwritable_bit(std::uint32_t bit, bool set, bool notify);
  bool remove_entry(std::exception_ptr error, bool notify);

  Channel* channel_;
  std::optional<Entry> first_;  // the head of the queue, without a heap allocation
  detail::RingBuffer<Entry, RingAllocator> rest_;
  std::size_t flushed_ = 0;  // entry(0) .. entry(flushed_ - 1) are flushed
  std::size_t pending_bytes_ = 0;
  std::uint32_t unwritable_ = 0;
  bool failing_ = false;
};

}  // namespace trellis
