// RingBuffer: FIFO order across wrap-around and growth, take_at removing from anywhere, push_front.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <trellis/pipeline/detail/ring_buffer.hpp>

using trellis::detail::RingBuffer;

namespace {
std::vector<int> contents(const RingBuffer<std::unique_ptr<int>>& ring) {
  std::vector<int> out;
  for (const auto& p : ring) out.push_back(*p);
  return out;
}
}  // namespace

TEST_CASE("RingBuffer keeps FIFO order across wrap-around and growth") {
  RingBuffer<std::unique_ptr<int>> ring;
  int next = 0;
  int expected = 0;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 5; ++i) ring.push_back(std::make_unique<int>(next++));
    for (int i = 0; i < 3; ++i) CHECK(*ring.take_front() == expected++);
  }
  CHECK(ring.size() == 100);
  while (!ring.empty()) CHECK(*ring.take_front() == expected++);
  CHECK(expected == next);
}

TEST_CASE("RingBuffer::take_at removes from the front, the middle and the back, wrapped or not") {
  for (int offset = 0; offset < 8; ++offset) {
    RingBuffer<std::unique_ptr<int>> ring;
    // Move the head round the array so that the elements wrap past its end.
    for (int i = 0; i < offset; ++i) ring.push_back(std::make_unique<int>(-1));
    for (int i = 0; i < offset; ++i) ring.pop_front();
    for (int i = 0; i < 6; ++i) ring.push_back(std::make_unique<int>(i));
    CHECK(*ring.take_at(2) == 2);
    CHECK(contents(ring) == std::vector<int>{0, 1, 3, 4, 5});
    CHECK(*ring.take_at(0) == 0);
    CHECK(*ring.take_at(3) == 5);
    CHECK(contents(ring) == std::vector<int>{1, 3, 4});
    ring.push_back(std::make_unique<int>(6));
    CHECK(contents(ring) == std::vector<int>{1, 3, 4, 6});
    while (!ring.empty()) ring.take_at(ring.size() - 1);
    ring.push_back(std::make_unique<int>(7));
    CHECK(contents(ring) == std::vector<int>{7});
  }
  RingBuffer<std::string> empty;
  CHECK_THROWS(empty.take_at(0));
}

TEST_CASE("RingBuffer::push_front puts an element first, wrapped, growing and from empty") {
  for (int offset = 0; offset < 8; ++offset) {
    RingBuffer<std::unique_ptr<int>> ring;
    for (int i = 0; i < offset; ++i) ring.push_back(std::make_unique<int>(-1));
    for (int i = 0; i < offset; ++i) ring.pop_front();
    ring.push_front(std::make_unique<int>(1));  // into an empty ring
    ring.push_back(std::make_unique<int>(2));
    ring.push_front(std::make_unique<int>(0));
    CHECK(contents(ring) == std::vector<int>{0, 1, 2});
    // Past the first array's capacity: the ring grows with the order kept.
    for (int i = 1; i <= 10; ++i) ring.push_front(std::make_unique<int>(-i));
    CHECK(ring.size() == 13);
    int expected = -10;
    while (!ring.empty()) CHECK(*ring.take_front() == expected++);
    CHECK(expected == 3);
  }
}
