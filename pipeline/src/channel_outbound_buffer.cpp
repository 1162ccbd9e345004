// The outbound queue of a channel (see channel_outbound_buffer.hpp).
#include <trellis/pipeline/channel_outbound_buffer.hpp>

#include <algorithm>
#include <new>
#include <utility>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/pipeline/datagram_packet.hpp>
#include <trellis/pipeline/file_region.hpp>

namespace trellis {

namespace {

// One spare array per ring capacity from 8 to 64 entries, per thread: a ring freed when its
// channel's queue drains is taken again by the next burst on this thread (pipelined HTTP queues
// 16 responses per read), so steady bursts do not reach malloc, and an idle channel still holds
// no ring. A spare only holds memory (no elements), so it may travel between threads: a buffer
// drained elsewhere gives its array to that thread's spares.
struct SpareRingArrays {
  static constexpr std::size_t kClasses = 4;  // 8, 16, 32, 64 entries
  void* arrays[kClasses] = {};
  bool gone = false;  // destroyed at thread exit: arrays returned later are freed at once
  SpareRingArrays() = default;
  SpareRingArrays(const SpareRingArrays&) = delete;
  SpareRingArrays& operator=(const SpareRingArrays&) = delete;
  ~SpareRingArrays() {
    for (auto*& array : arrays) {
      ::operator delete(array);
      array = nullptr;
    }
    gone = true;
  }
  // The slot for arrays of n entries, or -1.
  static int slot(std::size_t n) noexcept {
    constexpr std::size_t kFirst = detail::RingBuffer<int>::kInitialCapacity;
    for (std::size_t i = 0; i < kClasses; ++i) {
      if (n == kFirst << i) return static_cast<int>(i);
    }
    return -1;
  }
};

thread_local SpareRingArrays spare_ring_arrays;

}  // namespace

ChannelOutboundBuffer::Entry* ChannelOutboundBuffer::RingAllocator::allocate(std::size_t n) {
  static_assert(alignof(Entry) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  if (const int slot = SpareRingArrays::slot(n); slot >= 0) {
    auto& spare = spare_ring_arrays.arrays[slot];
    if (spare != nullptr) return static_cast<Entry*>(std::exchange(spare, nullptr));
  }
  return static_cast<Entry*>(::operator new(n * sizeof(Entry)));
}

void ChannelOutboundBuffer::RingAllocator::deallocate(Entry* p, std::size_t n) noexcept {
  if (const int slot = SpareRingArrays::slot(n); slot >= 0) {
    SpareRingArrays& spares = spare_ring_arrays;
    if (spares.arrays[slot] == nullptr && !spares.gone) {
      spares.arrays[slot] = p;
      return;
    }
  }
  ::operator delete(p);
}

ChannelOutboundBuffer::~ChannelOutboundBuffer() {
  if (queued() != 0) close(std::make_exception_ptr(ClosedChannelError()));
}

void ChannelOutboundBuffer::push_entry(Entry&& e) {
  if (!first_ && rest_.empty()) {
    first_.emplace(std::move(e));
  } else {
    rest_.push_back(std::move(e));
  }
}

void ChannelOutboundBuffer::drop_front() noexcept {
  if (first_) {
    first_.reset();
  } else {
    rest_.pop_front();
  }
  if (rest_.empty()) rest_.release();  // drained: an idle channel holds no ring
}

std::size_t ChannelOutboundBuffer::message_size(const Message& msg) noexcept {
  if (const auto* buf = msg.try_get<ByteBuf>()) return buf->readable_bytes();
  if (const auto* composite = msg.try_get<CompositeByteBuf>()) return composite->readable_bytes();
  if (const auto* packet = msg.try_get<DatagramPacket>()) return packet->content.readable_bytes();
  if (const auto* region = msg.try_get<FileRegion>()) {
    return static_cast<std::size_t>(region->remaining());
  }
  return kUnknownMessageSize;
}

void ChannelOutboundBuffer::add_message(Message&& msg, std::size_t size, ChannelPromise&& promise) {
  push_entry(Entry{std::move(msg), std::move(promise), size});
  increment_pending(size);
}

void ChannelOutboundBuffer::increment_pending(std::size_t size) {
  if (size == 0) return;
  pending_bytes_ += size;
  if (pending_bytes_ > channel_->config().write_buffer_high_water_mark()) {
    set_unwritable_bit(kWaterMarkBit, true, true);
  }
}

void ChannelOutboundBuffer::decrement_pending(std::size_t size, bool notify) {
  if (size == 0) return;
  pending_bytes_ -= std::min(size, pending_bytes_);
  if (pending_bytes_ < channel_->config().write_buffer_low_water_mark()) {
    set_unwritable_bit(kWaterMarkBit, false, notify);
  }
}

void ChannelOutboundBuffer::set_unwritable_bit(std::uint32_t bit, bool set, bool notify) {
  const std::uint32_t old = unwritable_;
  unwritable_ = set ? (old | bit) : (old & ~bit);
  if (notify && (old == 0) != (unwritable_ == 0)) {
    channel_->pipeline().fire_channel_writability_changed();
  }
}

void ChannelOutboundBuffer::set_user_defined_writability(bool writable) {
  set_unwritable_bit(kUserBit, !writable, true);
}

std::size_t ChannelOutboundBuffer::bytes_before_unwritable() const noexcept {
  const std::size_t high = channel_->config().write_buffer_high_water_mark();
  return is_writable() && high > pending_bytes_ ? high - pending_bytes_ : 0;
}

std::size_t ChannelOutboundBuffer::bytes_before_writable() const noexcept {
  const std::size_t low = channel_->config().write_buffer_low_water_mark();
  return !is_writable() && pending_bytes_ > low ? pending_bytes_ - low : 0;
}

bool ChannelOutboundBuffer::remove_entry(std::exception_ptr error, bool notify) {
  if (flushed_ == 0) return false;
  --flushed_;
  // The entry goes first, in place (its message's bytes return to the pool), then the promise
  // tells the writer, who may queue more.
  Entry& front = entry(0);
  ChannelPromise promise = std::move(front.promise);
  const std::size_t size = front.size;
  drop_front();
  if (error) {
    promise.try_set_exception(std::move(error));
  } else {
    promise.try_set_value();
  }
  decrement_pending(size, notify);
  return true;
}

void ChannelOutboundBuffer::progress(std::size_t amount) {
  if (flushed_ == 0 || amount == 0) return;
  Entry& front = entry(0);
  amount = std::min(amount, front.size);
  front.size -= amount;
  decrement_pending(amount, true);
}

bool ChannelOutboundBuffer::remove() { return remove_entry(nullptr, true); }

bool ChannelOutboundBuffer::remove(std::exception_ptr error) {
  if (!error) error = std::make_exception_ptr(IllegalStateError("write failed"));
  return remove_entry(std::move(error), true);
}

void ChannelOutboundBuffer::remove_bytes(std::size_t written) {
  while (Message* msg = current()) {
    std::size_t readable;
    ByteBuf* buf = msg->try_get<ByteBuf>();
    CompositeByteBuf* composite = buf ? nullptr : msg->try_get<CompositeByteBuf>();
    if (buf != nullptr) {
      readable = buf->readable_bytes();
    } else if (composite != nullptr) {
      readable = composite->readable_bytes();
    } else {
      break;
    }
    if (readable <= written) {
      written -= readable;
      remove();
    } else {
      if (written != 0) {
        if (buf != nullptr) {
          buf->skip_bytes(written);
        } else {
          composite->skip_bytes(written);
        }
      }
      break;
    }
  }
}

std::size_t ChannelOutboundBuffer::to_iovecs(std::span<struct iovec> out, std::size_t max_bytes,
                                             std::size_t* bytes) {
  std::size_t n = 0;
  std::size_t total = 0;
  for (std::size_t i = 0; i < flushed_ && n < out.size(); ++i) {
    Message& msg = entry(i).msg;
    if (const auto* buf = msg.try_get<ByteBuf>()) {
      const auto span = buf->readable_span();
      if (span.empty()) continue;
      if (n > 0 && total + span.size() > max_bytes) break;
      out[n].iov_base = const_cast<std::byte*>(span.data());
      out[n].iov_len = span.size();
      ++n;
      total += span.size();
    } else if (const auto* composite = msg.try_get<CompositeByteBuf>()) {
      const std::size_t len = composite->readable_bytes();
      if (len == 0) continue;
      if (n > 0 && total + len > max_bytes) break;
      const std::size_t filled = composite->to_iovecs(out.subspan(n));
      for (std::size_t k = n; k < n + filled; ++k) total += out[k].iov_len;
      n += filled;
      if (n == out.size()) break;
    } else {
      break;
    }
  }
  if (bytes != nullptr) *bytes = total;
  return n;
}

void ChannelOutboundBuffer::fail_flushed(std::exception_ptr error, bool notify_writability) {
  // A promise listener may close the channel while we fail: let the outer loop finish.
  if (failing_) return;
  failing_ = true;
  while (remove_entry(error, notify_writability)) {
  }
  failing_ = false;
}

void ChannelOutboundBuffer::close(std::exception_ptr error) {
  flushed_ = queued();
  if (failing_) return;  // the running fail_flushed drains everything now flushed
  failing_ = true;
  while (remove_entry(error, false)) {
  }
  failing_ = false;
}

}  // namespace trellis
