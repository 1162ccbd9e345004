// The scheduled-task heap (see scheduled_task_queue.hpp).
#include <trellis/pipeline/detail/scheduled_task_queue.hpp>

namespace trellis::detail {

ScheduledTaskBase* ScheduledTaskQueue::pop() noexcept {
  if (heap_.empty()) return nullptr;
  ScheduledTaskBase* task = heap_.front().task;
  task->heap_index = kNotQueued;
  Entry last = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) {
    place(0, last);
    sift_down(0);
  }
  return task;
}

bool ScheduledTaskQueue::remove(ScheduledTaskBase* task) noexcept {
  std::size_t i = task->heap_index;
  if (i >= heap_.size() || heap_[i].task != task) return false;
  task->heap_index = kNotQueued;
  Entry last = heap_.back();
  heap_.pop_back();
  if (i < heap_.size()) {
    place(i, last);
    if (i > 0 && heap_[i].before(heap_[(i - 1) / 2])) {
      sift_up(i);
    } else {
      sift_down(i);
    }
  }
  task->state().release();
  return true;
}

void ScheduledTaskQueue::sift_up(std::size_t i) noexcept {
  Entry e = heap_[i];
  while (i > 0) {
    std::size_t parent = (i - 1) / 2;
    if (!e.before(heap_[parent])) break;
    place(i, heap_[parent]);
    i = parent;
  }
  place(i, e);
}

void ScheduledTaskQueue::sift_down(std::size_t i) noexcept {
  const std::size_t n = heap_.size();
  Entry e = heap_[i];
  for (;;) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_[child + 1].before(heap_[child])) ++child;
    if (!heap_[child].before(e)) break;
    place(i, heap_[child]);
    i = child;
  }
  place(i, e);
}

std::vector<ScheduledTaskBase*> ScheduledTaskQueue::take_all() {
  std::vector<ScheduledTaskBase*> tasks;
  tasks.reserve(heap_.size());
  for (auto& e : heap_) {
    e.task->heap_index = kNotQueued;
    tasks.push_back(e.task);
  }
  heap_.clear();
  return tasks;
}

void ScheduledTaskQueue::clear() noexcept {
  std::vector<Entry> tasks;
  tasks.swap(heap_);
  for (auto& e : tasks) {
    e.task->heap_index = kNotQueued;
    e.task->state().release();
  }
}

}  // namespace trellis::detail
