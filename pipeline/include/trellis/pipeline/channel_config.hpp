// ChannelConfig: the per-channel settings the pipeline and transports read: auto_read, the write
// buffer water marks, the buffer allocator, reads per wake-up, the connect timeout and how long
// a channel may go on writing after the peer's FIN.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>

#include <trellis/pipeline/byte_buf_allocator.hpp>

namespace trellis {

class Channel;

/// The per-channel settings the pipeline and transports read (`channel.config()`). Settings may
/// be changed from any thread; the channel reads them on its event loop. Setters return the
/// config, for chaining.
class ChannelConfig {
 public:
  /// Default high water mark: 64 KiB.
  static constexpr std::size_t kDefaultWriteBufferHighWaterMark = 64 * 1024;
  /// Default low water mark: 32 KiB.
  static constexpr std::size_t kDefaultWriteBufferLowWaterMark = 32 * 1024;
  /// Default reads per wake-up: 16.
  static constexpr int kDefaultMaxMessagesPerRead = 16;
  /// Default connect timeout: 30 s.
  static constexpr std::chrono::milliseconds kDefaultConnectTimeout{30'000};
  /// Default drain time after the peer's FIN: 30 s.
  static constexpr std::chrono::milliseconds kDefaultEofDrainTimeout{30'000};

  /// Internal: every Channel makes its own config.
  explicit ChannelConfig(Channel& channel) noexcept : channel_(&channel) {}
  ChannelConfig(const ChannelConfig&) = delete;
  ChannelConfig& operator=(const ChannelConfig&) = delete;

  /// With auto_read on (the default), the channel reads whenever it can; off, it reads once per
  /// read() call.
  bool auto_read() const noexcept { return auto_read_.load(std::memory_order_relaxed); }
  /// Turns auto_read on or off. Turning it on requests a read at once (as in Netty).
  ChannelConfig& set_auto_read(bool on);

  /// The channel turns unwritable when more than the high mark is queued for writing and
  /// writable again once the queue drops below the low mark.
  std::size_t write_buffer_high_water_mark() const noexcept {
    return high_water_mark_.load(std::memory_order_relaxed);
  }
  /// The low water mark (see write_buffer_high_water_mark()).
  std::size_t write_buffer_low_water_mark() const noexcept {
    return low_water_mark_.load(std::memory_order_relaxed);
  }
  /// Sets both water marks. Throws InvalidArgumentError when low > high.
  ChannelConfig& set_write_buffer_water_mark(std::size_t low, std::size_t high);

  /// The allocator handlers and transports take buffers from (ByteBufAllocator's default).
  ByteBufAllocator& allocator() const noexcept {
    return *allocator_.load(std::memory_order_relaxed);
  }
  /// Sets the allocator; it must outlive the channel.
  ChannelConfig& set_allocator(ByteBufAllocator& allocator) noexcept {
    allocator_.store(&allocator, std::memory_order_relaxed);
    return *this;
  }

  /// Reads per wake-up before channel_read_complete (and the next wake-up).
  int max_messages_per_read() const noexcept {
    return max_messages_per_read_.load(std::memory_order_relaxed);
  }
  /// Sets max_messages_per_read(); throws InvalidArgumentError when `n` is not positive.
  ChannelConfig& set_max_messages_per_read(int n);

  /// How long a connect may take before it fails.
  std::chrono::milliseconds connect_timeout() const noexcept {
    return std::chrono::milliseconds(connect_timeout_ms_.load(std::memory_order_relaxed));
  }
  /// Sets connect_timeout().
  ChannelConfig& set_connect_timeout(std::chrono::milliseconds timeout) noexcept {
    connect_timeout_ms_.store(timeout.count(), std::memory_order_relaxed);
    return *this;
  }

  /// Without half-closure, a peer's FIN (end of stream) closes the channel, but only once the
  /// writes already flushed (and those flushed until then) have gone to the socket: the channel
  /// stops reading and stays active meanwhile. This bounds that drain, measured from the end of
  /// stream on the loop's clock: when it runs out, the channel closes and what is left fails with
  /// ClosedChannelError (a peer that sent FIN and reads nothing cannot hold the connection).
  /// 0 (or less) closes at the end of stream at once, dropping what was not written yet (the
  /// behaviour before the drain). Read at the end of stream; with half-closure it does not apply.
  std::chrono::milliseconds eof_drain_timeout() const noexcept {
    return std::chrono::milliseconds(eof_drain_timeout_ms_.load(std::memory_order_relaxed));
  }
  /// Sets eof_drain_timeout().
  ChannelConfig& set_eof_drain_timeout(std::chrono::milliseconds timeout) noexcept {
    eof_drain_timeout_ms_.store(timeout.count(), std::memory_order_relaxed);
    return *this;
  }

  /// Close the channel when a write fails (Netty's AUTO_CLOSE; on by default).
  bool auto_close() const noexcept { return auto_close_.load(std::memory_order_relaxed); }
  /// Sets auto_close().
  ChannelConfig& set_auto_close(bool on) noexcept {
    auto_close_.store(on, std::memory_order_relaxed);
    return *this;
  }

 private:
  Channel* channel_;
  std::atomic<bool> auto_read_{true};
  std::atomic<bool> auto_close_{true};
  std::atomic<std::size_t> high_water_mark_{kDefaultWriteBufferHighWaterMark};
  std::atomic<std::size_t> low_water_mark_{kDefaultWriteBufferLowWaterMark};
  std::atomic<ByteBufAllocator*> allocator_{&ByteBufAllocator::default_allocator()};
  std::atomic<int> max_messages_per_read_{kDefaultMaxMessagesPerRead};
  std::atomic<std::int64_t> connect_timeout_ms_{kDefaultConnectTimeout.count()};
  std::atomic<std::int64_t> eof_drain_timeout_ms_{kDefaultEofDrainTimeout.count()};
};

}  // namespace trellis
