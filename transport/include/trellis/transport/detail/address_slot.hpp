// AddressSlot: where a transport channel keeps its local or remote address, which its loop
// rewrites (bind, connect, disconnect) while local_address() / remote_address() may be called
// from any thread.
#pragma once

#include <atomic>
#include <optional>
#include <thread>
#include <utility>

#include <trellis/pipeline/socket_address.hpp>

namespace trellis::detail {

// An optional SocketAddress written by one thread (the channel's loop) and read by any. A
// one-byte spin lock guards the copy: writes are rare (a bind, a connect) and both sides hold it
// only for a copy or an assignment, so a reader waits a few nanoseconds at most. The writing
// thread reads without the lock (loop_value()): nobody else writes.
class AddressSlot {
 public:
  // A copy of the address, from any thread.
  std::optional<SocketAddress> load() const {
    Guard guard(lock_);
    return value_;
  }
  // Replaces the address; on the writing thread only.
  void store(std::optional<SocketAddress> address) {
    {
      Guard guard(lock_);
      value_.swap(address);
    }
    // The old address (it may hold a shared heap block) is released outside the lock.
  }
  // The address as the writing thread last stored it, without the lock; on that thread only.
  const std::optional<SocketAddress>& loop_value() const noexcept { return value_; }

 private:
  class Guard {
   public:
    explicit Guard(std::atomic<bool>& lock) noexcept : lock_(lock) {
      while (lock_.exchange(true, std::memory_order_acquire)) {
        while (lock_.load(std::memory_order_relaxed)) std::this_thread::yield();
      }
    }
    ~Guard() { lock_.store(false, std::memory_order_release); }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    std::atomic<bool>& lock_;
  };

  mutable std::atomic<bool> lock_{false};
  std::optional<SocketAddress> value_;
};

}  // namespace trellis::detail
