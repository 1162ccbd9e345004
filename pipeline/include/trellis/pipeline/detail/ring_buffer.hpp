// RingBuffer<T>: a growable FIFO on one power-of-two array. Unlike std::deque it never frees
// memory while it cycles, so a steady push/pop stream (queued writes, test message queues)
// allocates nothing once it has grown to its working size; release() gives the memory back.
// Alloc must be stateless (it is default-constructed wherever memory is taken or returned).
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <new>
#include <utility>

#include <trellis/pipeline/error.hpp>

namespace trellis::detail {

template <class T, class Alloc = std::allocator<T>>
class RingBuffer {
 public:
  // The capacity of the first array, taken on the first push.
  static constexpr std::size_t kInitialCapacity = 8;

  template <bool kConst>
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<kConst, const T*, T*>;
    using reference = std::conditional_t<kConst, const T&, T&>;

    Iterator() noexcept = default;
    Iterator(std::conditional_t<kConst, const RingBuffer*, RingBuffer*> ring,
             std::size_t index) noexcept
        : ring_(ring), index_(index) {}
    reference operator*() const noexcept { return (*ring_)[index_]; }
    pointer operator->() const noexcept { return &(*ring_)[index_]; }
    Iterator& operator++() noexcept {
      ++index_;
      return *this;
    }
    Iterator operator++(int) noexcept {
      auto copy = *this;
      ++index_;
      return copy;
    }
    bool operator==(const Iterator& o) const noexcept { return index_ == o.index_; }

   private:
    std::conditional_t<kConst, const RingBuffer*, RingBuffer*> ring_ = nullptr;
    std::size_t index_ = 0;
  };
  using iterator = Iterator<false>;
  using const_iterator = Iterator<true>;

  RingBuffer() noexcept = default;
  RingBuffer(RingBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        capacity_(std::exchange(o.capacity_, 0)),
        head_(std::exchange(o.head_, 0)),
        size_(std::exchange(o.size_, 0)) {}
  RingBuffer& operator=(RingBuffer&& o) noexcept {
    if (this != &o) {
      destroy_all();
      data_ = std::exchange(o.data_, nullptr);
      capacity_ = std::exchange(o.capacity_, 0);
      head_ = std::exchange(o.head_, 0);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  RingBuffer(const RingBuffer&) = delete;
  RingBuffer& operator=(const RingBuffer&) = delete;
  ~RingBuffer() { destroy_all(); }

  bool empty() const noexcept { return size_ == 0; }
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }

  T& operator[](std::size_t i) noexcept { return data_[(head_ + i) & (capacity_ - 1)]; }
  const T& operator[](std::size_t i) const noexcept { return data_[(head_ + i) & (capacity_ - 1)]; }
  T& front() { return at_checked(0); }
  const T& front() const { return const_cast<RingBuffer*>(this)->at_checked(0); }
  T& back() { return at_checked(size_ - 1); }
  const T& back() const { return const_cast<RingBuffer*>(this)->at_checked(size_ - 1); }

  template <class... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) grow();
    T* slot = &data_[(head_ + size_) & (capacity_ - 1)];
    ::new (static_cast<void*>(slot)) T(std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }
  void push_back(T&& value) { emplace_back(std::move(value)); }
  // Puts value first (an element given back to the head of the queue).
  void push_front(T&& value) {
    if (size_ == capacity_) grow();
    const std::size_t slot = (head_ + capacity_ - 1) & (capacity_ - 1);
    ::new (static_cast<void*>(&data_[slot])) T(std::move(value));
    head_ = slot;
    ++size_;
  }

  void pop_front() {
    if (size_ == 0) throw IllegalStateError("pop_front on an empty queue");
    std::destroy_at(&data_[head_]);
    head_ = (head_ + 1) & (capacity_ - 1);
    --size_;
  }
  // Removes and returns the first element.
  T take_front() {
    T value(std::move(front()));
    pop_front();
    return value;
  }
  // Removes and returns the element at i; the ones after it move up one place (as a deque's
  // erase in the middle, for the rare removal of a queued element that gave up waiting).
  T take_at(std::size_t i) {
    T value(std::move(at_checked(i)));
    for (std::size_t k = i + 1; k < size_; ++k) (*this)[k - 1] = std::move((*this)[k]);
    std::destroy_at(&(*this)[size_ - 1]);
    if (--size_ == 0) head_ = 0;
    return value;
  }
  // Destroys the elements; keeps the memory.
  void clear() noexcept {
    while (size_ != 0) {
      std::destroy_at(&data_[head_]);
      head_ = (head_ + 1) & (capacity_ - 1);
      --size_;
    }
    head_ = 0;
  }
  // Destroys the elements and frees the memory (capacity() becomes 0).
  void release() noexcept { destroy_all(); }

  iterator begin() noexcept { return {this, 0}; }
  iterator end() noexcept { return {this, size_}; }
  const_iterator begin() const noexcept { return {this, 0}; }
  const_iterator end() const noexcept { return {this, size_}; }

 private:
  T& at_checked(std::size_t i) {
    if (i >= size_) throw IllegalStateError("queue is empty");
    return (*this)[i];
  }
  void grow() {
    const std::size_t cap = capacity_ == 0 ? kInitialCapacity : capacity_ * 2;
    T* fresh = Alloc().allocate(cap);
    for (std::size_t i = 0; i < size_; ++i) {
      T& src = (*this)[i];
      ::new (static_cast<void*>(fresh + i)) T(std::move(src));
      std::destroy_at(&src);
    }
    if (data_ != nullptr) Alloc().deallocate(data_, capacity_);
    data_ = fresh;
    capacity_ = cap;
    head_ = 0;
  }
  void destroy_all() noexcept {
    clear();
    if (data_ != nullptr) Alloc().deallocate(data_, capacity_);
    data_ = nullptr;
    capacity_ = 0;
  }

  T* data_ = nullptr;
  std::size_t capacity_ = 0;  // 0 or a power of two
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace trellis::detail
