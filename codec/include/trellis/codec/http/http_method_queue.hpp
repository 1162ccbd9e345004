// HttpMethodQueue: the methods of the requests whose responses are still to come, oldest first
// (the codecs need them: a response to HEAD has no body). A ring held inside its owner, so a
// connection allocates nothing for it unless more than kInline requests are pipelined at once.
#pragma once

#include <cstdint>
#include <memory>

#include <trellis/codec/http/http_message.hpp>

namespace trellis::http {

class HttpMethodQueue {
 public:
  /// Entries held without an allocation.
  static constexpr std::uint32_t kInline = 16;

  HttpMethodQueue() = default;
  HttpMethodQueue(const HttpMethodQueue&) = delete;
  HttpMethodQueue& operator=(const HttpMethodQueue&) = delete;

  /// True when no method is queued.
  bool empty() const noexcept { return size_ == 0; }
  /// How many methods are queued.
  std::size_t size() const noexcept { return size_; }
  /// The oldest method (the queue must not be empty).
  HttpMethod::Id front() const noexcept { return data()[head_]; }
  /// Queues a method, doubling the ring when it is full.
  void push_back(HttpMethod::Id method) {
    if (size_ == capacity_) grow();
    data()[(head_ + size_) & (capacity_ - 1)] = method;
    ++size_;
  }
  /// Drops the oldest method (the queue must not be empty).
  void pop_front() noexcept {
    head_ = (head_ + 1) & (capacity_ - 1);
    --size_;
  }

 private:
  HttpMethod::Id* data() noexcept { return heap_ ? heap_.get() : inline_; }
  const HttpMethod::Id* data() const noexcept { return heap_ ? heap_.get() : inline_; }
  void grow() {
    auto bigger = std::make_unique<HttpMethod::Id[]>(std::size_t{capacity_} * 2);
    const HttpMethod::Id* old = data();
    for (std::uint32_t i = 0; i < size_; ++i) bigger[i] = old[(head_ + i) & (capacity_ - 1)];
    heap_ = std::move(bigger);
    head_ = 0;
    capacity_ *= 2;
  }

  std::unique_ptr<HttpMethod::Id[]> heap_;  // once more than kInline were queued
  std::uint32_t head_ = 0;
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = kInline;  // a power of two: indexes wrap with a mask
  HttpMethod::Id inline_[kInline];
};

}  // namespace trellis::http
