// ScheduledTaskQueue: the binary min-heap of scheduled tasks ordered by (deadline, sequence), so
// equal deadlines run first-in-first-out. Each task knows its slot, so removal is O(log n).
// Not thread-safe: its executor confines it to one thread (or guards it).
#pragma once

#include <cstdint>
#include <vector>

#include <trellis/pipeline/scheduled_future.hpp>

namespace trellis::detail {

class ScheduledTaskQueue {
 public:
  ScheduledTaskQueue() = default;
  ScheduledTaskQueue(const ScheduledTaskQueue&) = delete;
  ScheduledTaskQueue& operator=(const ScheduledTaskQueue&) = delete;
  // Drops (releases) every queued task without running it.
  ~ScheduledTaskQueue() { clear(); }

  bool empty() const noexcept { return heap_.empty(); }
  std::size_t size() const noexcept { return heap_.size(); }
  // The earliest task, or nullptr.
  ScheduledTaskBase* top() const noexcept { return heap_.empty() ? nullptr : heap_.front().task; }
  std::int64_t next_deadline() const noexcept {
    return heap_.empty() ? -1 : heap_.front().deadline;
  }

  // Takes over the caller's reference to task. Inline: a deadline later than its parent's (the
  // common case: timers armed in increasing order) costs no sift.
  void push(ScheduledTaskBase* task) {
    task->sequence = next_sequence_++;
    Entry e{task->deadline_nanos(), task->sequence, task};
    std::size_t i = heap_.size();
    heap_.push_back(e);
    task->heap_index = i;
    if (i > 0 && e.before(heap_[(i - 1) / 2])) sift_up(i);
  }
  // Removes the earliest task and hands its reference to the caller.
  ScheduledTaskBase* pop() noexcept;
  // Removes task if queued (releasing the queue's reference); returns whether it was queued.
  bool remove(ScheduledTaskBase* task) noexcept;
  // Empties the queue, handing the references of all tasks to the caller.
  std::vector<ScheduledTaskBase*> take_all();
  void clear() noexcept;

 private:
  struct Entry {
    std::int64_t deadline;
    std::uint64_t sequence;
    ScheduledTaskBase* task;
    bool before(const Entry& o) const noexcept {
      return deadline < o.deadline || (deadline == o.deadline && sequence < o.sequence);
    }
  };
  void sift_up(std::size_t i) noexcept;
  void sift_down(std::size_t i) noexcept;
  void place(std::size_t i, const Entry& e) noexcept {
    heap_[i] = e;
    e.task->heap_index = i;
  }

  std::vector<Entry> heap_;
  std::uint64_t next_sequence_ = 0;
};

}  // namespace trellis::detail
