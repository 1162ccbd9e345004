// A shared-queue thread pool with scheduling (see thread_pool_executor.hpp).
#include <trellis/pipeline/thread_pool_executor.hpp>

#include <pthread.h>

#include <cstdlib>

#include <spdlog/spdlog.h>

#include <trellis/pipeline/detail/run_logged.hpp>

namespace trellis {

namespace {
thread_local const ThreadPoolExecutor* t_pool = nullptr;
}  // namespace

ThreadPoolExecutor::ThreadPoolExecutor(std::size_t threads, std::string name)
    : name_(std::move(name)), termination_(nullptr) {
  if (threads == 0) threads = 1;
  running_workers_ = threads;
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([this, i] { run_worker(i); });
  }
}

ThreadPoolExecutor::~ThreadPoolExecutor() {
  do_shutdown_gracefully(std::chrono::nanoseconds(0), std::chrono::nanoseconds(0));
  for (auto& t : threads_) {
    if (t.get_id() == std::this_thread::get_id()) {
      // The pool would be freed under its own worker's call stack: that cannot be made safe.
      spdlog::critical("trellis: {} destroyed from one of its own threads", name_);
      std::abort();
    }
    if (t.joinable()) {
      t.join();
    }
  }
}

void ThreadPoolExecutor::execute(UniqueFunction<void()> fn) {
  {
    std::lock_guard lock(mutex_);
    if (terminated_) throw RejectedExecutionError(name_ + " is terminated");
    tasks_.push_back(std::move(fn));
  }
  cv_.notify_one();
}

bool ThreadPoolExecutor::in_event_loop() const { return t_pool == this; }

void ThreadPoolExecutor::schedule_task(detail::ScheduledTaskBase* task) {
  std::unique_lock lock(mutex_);
  if (terminated_) {
    lock.unlock();
    task->state().try_fail(
        std::make_exception_ptr(RejectedExecutionError(name_ + " is terminated")));
    task->state().release();
    throw RejectedExecutionError(name_ + " is terminated");
  }
  add_scheduled_task(task);
}

void ThreadPoolExecutor::cancel_scheduled_task(detail::ScheduledTaskBase* task) {
  std::lock_guard lock(mutex_);
  remove_scheduled_task(task);
}

bool ThreadPoolExecutor::is_shutting_down() const {
  std::lock_guard lock(mutex_);
  return shutting_down_;
}

bool ThreadPoolExecutor::is_terminated() const {
  std::lock_guard lock(mutex_);
  return terminated_;
}

Future<void> ThreadPoolExecutor::do_shutdown_gracefully(std::chrono::nanoseconds quiet_period,
                                                        std::chrono::nanoseconds timeout) {
  {
    std::lock_guard lock(mutex_);
    if (!shutting_down_) {
      shutting_down_ = true;
      auto now = current_time_nanos();
      quiet_nanos_ = quiet_period.count();
      shutdown_deadline_ = detail::deadline_after(now, timeout.count());
      last_activity_ = now;
    } else {
      // A later call may shorten the wait, never lengthen it.
      quiet_nanos_ = std::min<std::int64_t>(quiet_nanos_, quiet_period.count());
      shutdown_deadline_ = std::min(shutdown_deadline_,
                                    detail::deadline_after(current_time_nanos(), timeout.count()));
    }
  }
  cv_.notify_all();
  return termination_.future();
}

void ThreadPoolExecutor::run_worker(std::size_t index) {
  std::string thread_name = name_.substr(0, 10) + "-" + std::to_string(index);
  pthread_setname_np(pthread_self(), thread_name.c_str());
  t_pool = this;
  detail::CurrentExecutorScope scope(this);
  std::unique_lock lock(mutex_);
  for (;;) {
    auto now = current_time_nanos();
    if (auto* task = poll_scheduled_task(now)) {
      last_activity_ = now;
      lock.unlock();
      bool again = task->run();
      lock.lock();
      if (again) {
        add_scheduled_task(task);
      } else {
        task->state().release();
      }
      continue;
    }
    if (!tasks_.empty()) {
      auto fn = std::move(tasks_.front());
      tasks_.pop_front();
      last_activity_ = now;
      lock.unlock();
      detail::run_logged(fn);
      fn.reset();
      lock.lock();
      continue;
    }
    if (shutting_down_ && (now - last_activity_ >= quiet_nanos_ || now >= shutdown_deadline_)) {
      break;
    }
    std::int64_t wake = next_scheduled_deadline();
    if (shutting_down_) {
      auto quiet_end = detail::deadline_after(last_activity_, quiet_nanos_);
      auto stop_at = std::min(quiet_end, shutdown_deadline_);
      wake = wake < 0 ? stop_at : std::min(wake, stop_at);
    }
    if (wake < 0) {
      cv_.wait(lock);
    } else {
      cv_.wait_for(lock, std::chrono::nanoseconds(wake - now));
    }
  }
  bool last = --running_workers_ == 0;
  std::vector<detail::ScheduledTaskBase*> scheduled;
  std::deque<UniqueFunction<void()>> dropped;
  if (last) {
    terminated_ = true;
    scheduled = take_scheduled_tasks();
    dropped.swap(tasks_);
  }
  lock.unlock();
  cv_.notify_all();
  if (last) {
    cancel_and_release(scheduled);
    dropped.clear();
    termination_.try_set_value();
  }
}

}  // namespace trellis
