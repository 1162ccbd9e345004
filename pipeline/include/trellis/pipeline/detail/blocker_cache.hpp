// BlockerCache: the threads that run blocking code. Idle threads wait for a job for a keep-alive
// period, the most recently idled one is reused first (so a surplus idles out), and shutdown wakes
// and joins them all. WorkStealingPool gives worker roles to them; blocking() runs shifted jobs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <trellis/pipeline/unique_function.hpp>

namespace trellis::detail {

class BlockerCache {
 public:
  struct Options {
    // How long an idle thread waits for a job before it exits.
    std::chrono::nanoseconds keep_alive = std::chrono::seconds(60);
    // Most threads alive at once (the pool's initial workers count too).
    std::size_t max_threads = 512;
    // Threads started for blocking are named "<name>-N".
    std::string name = "trellis-blocker";
  };

  explicit BlockerCache(Options options);
  // Shuts down and joins every thread. Must not run on one of the cache's threads.
  ~BlockerCache();
  BlockerCache(const BlockerCache&) = delete;
  BlockerCache& operator=(const BlockerCache&) = delete;

  // Runs job on the most recently idled thread, or on a new one named "<name>-N". Returns false,
  // leaving job untouched, at the thread cap or after shutdown.
  bool try_run(UniqueFunction<void()>& job);
  // As try_run, but at the cap the job waits for the next thread that finishes its job. Returns
  // false (job untouched) only after shutdown.
  bool run(UniqueFunction<void()>& job);
  // Starts a thread named thread_name for job whatever the cap (a pool's initial workers).
  void start_thread(UniqueFunction<void()> job, std::string thread_name);

  // Stops taking jobs and wakes the idle threads, which exit; busy threads exit after their job
  // (and after any job queued at the cap). on_exit, if set, runs on the last thread to exit.
  void shutdown();
  void set_on_exit(UniqueFunction<void()> on_exit);
  // Waits for every thread to exit, then joins them. Call after shutdown(), not from a cache
  // thread.
  void join();
  // Joins the threads that have already exited (an idle thread whose keep-alive ran out exits;
  // it is joined when the next thread starts, or here). Threads still alive are left alone.
  void join_exited();

  // Threads started by try_run/run since construction (start_thread's are not counted).
  std::uint64_t threads_created() const;
  // Threads alive (idle, busy, or running a pool worker).
  std::size_t live_threads() const;
  // Threads idle in the cache.
  std::size_t idle_threads() const;
  std::chrono::nanoseconds keep_alive() const noexcept { return options_.keep_alive; }
  std::size_t max_threads() const noexcept { return options_.max_threads; }

  // Called by a thread of this cache whose job is about to end without handing it more work
  // (a replacement whose worker role was taken back): until the thread is idle in the cache,
  // try_run queues a job for it instead of starting a thread, so the gap between "my job is
  // over" and "I am idle" does not make the next hand-off start one. withdraw_return() undoes
  // it when the job finds more to do after all. Each may be called once per job.
  void announce_return();
  void withdraw_return();

  // The full name of the calling thread if a cache started it (e.g. "trellis-blocker-3"; the OS
  // name is cut to 15 characters), else an empty string.
  static const std::string& current_thread_name() noexcept;

 private:
  struct Thread {
    std::thread thread;
    std::condition_variable cv;
    UniqueFunction<void()> job;  // set by a taker while the thread is idle
    bool idle = false;
  };

  // Both expect mutex_ held; start_locked may throw std::system_error.
  void start_locked(UniqueFunction<void()>& job, std::string name);
  bool hand_to_idle_locked(UniqueFunction<void()>& job);
  void thread_main(Thread* self, std::string name, UniqueFunction<void()> first);
  // Waits for the next job; false when the thread must exit (keep-alive expired or shutdown).
  // Runs deferred (see defer_until_idle) once the thread is idle.
  bool next_job(Thread* self, UniqueFunction<void()>& job, UniqueFunction<void()>& deferred);
  std::vector<std::unique_ptr<Thread>> take_zombies_locked();

  const Options options_;
  mutable std::mutex mutex_;
  std::condition_variable exited_cv_;
  std::vector<Thread*> idle_;  // a stack: back() idled most recently
  std::vector<std::unique_ptr<Thread>> threads_;
  std::vector<std::unique_ptr<Thread>> zombies_;  // exited, not yet joined
  std::deque<UniqueFunction<void()>> pending_;    // jobs waiting at the cap
  UniqueFunction<void()> on_exit_;
  std::uint64_t created_ = 0;
  std::uint64_t next_index_ = 0;
  std::size_t live_ = 0;
  std::size_t returning_ = 0;  // threads that announced their return and are not idle yet
  bool shutdown_ = false;
};

}  // namespace trellis::detail
