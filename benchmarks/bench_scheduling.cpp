// Scheduling benchmarks on the Asio EventLoop: ports of Netty's ScheduleFutureTaskBenchmark and
// ScheduleFutureTaskDeadlineBenchmark, plus cross-thread execute and await of ready futures.
// Every benchmark reports allocs_per_op, counted by the linked operator-new hook.
#include <benchmark/benchmark.h>

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <queue>
#include <vector>

#include <trellis/testing/allocation_counter.hpp>
#include <trellis/transport.hpp>

using namespace trellis;

namespace {
constexpr int kNum = 100'000;

struct AllocCounter {
  std::uint64_t start = testing::total_allocations();
  void report(benchmark::State& state, double ops_per_iteration) const {
    auto n = static_cast<double>(testing::total_allocations() - start);
    state.counters["allocs_per_op"] =
        n / (static_cast<double>(state.iterations()) * ops_per_iteration);
  }
};

// CPU time of the calling thread: the loop's own cost, whatever else the machine is running.
std::int64_t thread_cpu_nanos() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

EventLoop& bench_loop() {
  static EventLoop loop("bench-el");
  return loop;
}

void drop_all(std::vector<ScheduledFuture<void>>& futures) {
  for (auto& f : futures) f.cancel();
  futures.clear();
  bench_loop().submit([] {}).get();  // let the cross-thread cancellations reach the loop
}

// Netty: schedule 100k tasks (1..100k hours) from inside the loop.
void ScheduleLots(benchmark::State& state) {
  auto& loop = bench_loop();
  std::vector<ScheduledFuture<void>> futures;
  futures.reserve(kNum);
  AllocCounter allocs;
  std::uint64_t excluded = 0;
  std::int64_t loop_cpu = 0;
  for (auto _ : state) {
    loop.submit([&] {
          auto start = thread_cpu_nanos();
          for (int i = 1; i <= kNum; ++i) {
            futures.push_back(loop.schedule(std::chrono::hours(i), [] {}));
          }
          loop_cpu += thread_cpu_nanos() - start;
        })
        .get();
    state.PauseTiming();
    auto before = testing::total_allocations();
    loop.submit([&] {  // cancel on the loop: nothing cross-thread in the teardown
          for (auto& f : futures) f.cancel();
          futures.clear();
        })
        .get();
    excluded += testing::total_allocations() - before;
    state.ResumeTiming();
  }
  allocs.start += excluded;
  allocs.report(state, kNum);
  // The loop thread's CPU per scheduled task: compare with HeapBaseline's CPU per push.
  state.counters["loop_cpu_ns_per_task"] =
      static_cast<double>(loop_cpu) / (static_cast<double>(state.iterations()) * kNum);
  state.SetItemsProcessed(state.iterations() * kNum);
}
BENCHMARK(ScheduleLots)->Unit(benchmark::kMicrosecond)->Iterations(30);

// The floor: the same 100k deadlines pushed into a std::priority_queue.
void HeapBaseline(benchmark::State& state) {
  std::vector<std::int64_t> storage;
  storage.reserve(kNum);
  std::priority_queue<std::int64_t, std::vector<std::int64_t>, std::greater<>> heap(
      std::greater<>{}, std::move(storage));
  AllocCounter allocs;
  for (auto _ : state) {
    auto now = AbstractScheduledEventExecutor::monotonic_nanos();
    for (int i = 1; i <= kNum; ++i) heap.push(now + std::int64_t{i} * 3'600'000'000'000);
    benchmark::DoNotOptimize(heap.top());
    state.PauseTiming();
    while (!heap.empty()) heap.pop();
    state.ResumeTiming();
  }
  allocs.report(state, kNum);
  state.counters["cpu_ns_per_push"] =
      benchmark::Counter(static_cast<double>(kNum), benchmark::Counter::kIsIterationInvariantRate |
                                                        benchmark::Counter::kInvert);
  state.SetItemsProcessed(state.iterations() * kNum);
}
BENCHMARK(HeapBaseline)->Unit(benchmark::kMicrosecond)->Iterations(30);

// Netty: schedule 100k tasks from another thread (timed until the loop has queued them all).
void ScheduleLotsOutsideLoop(benchmark::State& state) {
  auto& loop = bench_loop();
  std::vector<ScheduledFuture<void>> futures;
  futures.reserve(kNum);
  AllocCounter allocs;
  std::uint64_t excluded = 0;
  for (auto _ : state) {
    for (int i = 1; i <= kNum; ++i) futures.push_back(loop.schedule(std::chrono::hours(i), [] {}));
    loop.submit([] {}).get();
    state.PauseTiming();
    auto before = testing::total_allocations();
    drop_all(futures);
    excluded += testing::total_allocations() - before;
    state.ResumeTiming();
  }
  allocs.start += excluded;
  allocs.report(state, kNum);
  state.SetItemsProcessed(state.iterations() * kNum);
}
BENCHMARK(ScheduleLotsOutsideLoop)->Unit(benchmark::kMicrosecond)->Iterations(30);

// Netty: schedule then cancel each of 100k tasks from another thread.
void ScheduleCancelLotsOutsideLoop(benchmark::State& state) {
  auto& loop = bench_loop();
  AllocCounter allocs;
  for (auto _ : state) {
    for (int i = 1; i <= kNum; ++i) loop.schedule(std::chrono::hours(i), [] {}).cancel();
    loop.submit([] {}).get();
  }
  allocs.report(state, kNum);
  state.SetItemsProcessed(state.iterations() * kNum);
}
BENCHMARK(ScheduleCancelLotsOutsideLoop)->Unit(benchmark::kMicrosecond)->Iterations(30);

// Netty's ScheduleFutureTaskBenchmark shapes, measured as benchmarks/peers/ScheduleLots.java
// measures Netty (benchmarks/run_schedule_bench.sh runs both): each batch schedules kNum no-op
// tasks i hours ahead and drops the futures; between batches the loop cancels everything queued
// (untimed). After kWarmupBatches, every iteration is one batch; the counters are medians over the
// batches, per schedule:
//   cpu_ns     CPU time spent on scheduling: the loop thread's (in the loop), or the caller's
//              plus the loop's until the loop has taken in every task (outside it)
//   caller_ns  CPU time of the thread calling schedule()
//   wall_ns    wall time until the loop has taken in every task
//   allocs_per_schedule  heap allocations of all threads per schedule (mean over the batches)
//   wakeups_per_batch    times the loop was woken from outside per batch (mean)
// Enough for the node pool to settle: blocks circulate between the scheduling thread, the loop
// (which keeps up to 4096 of them) and the depot, and the first batches top the pool up.
constexpr int kWarmupBatches = 20;

clockid_t loop_cpu_clock() {
  static const clockid_t id = [] {
    return bench_loop()
        .submit([] {
          clockid_t c{};
          pthread_getcpuclockid(pthread_self(), &c);
          return c;
        })
        .get();
  }();
  return id;
}

std::int64_t cpu_nanos(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct ShapeSamples {
  std::vector<double> cpu, caller, wall;
  std::uint64_t allocs = 0;
  std::uint64_t wakeups = 0;
  ShapeSamples() {
    cpu.reserve(1024);
    caller.reserve(1024);
    wall.reserve(1024);
  }
  void add(std::int64_t cpu_ns, std::int64_t caller_ns, std::int64_t wall_ns) {
    cpu.push_back(static_cast<double>(cpu_ns) / kNum);
    caller.push_back(static_cast<double>(caller_ns) / kNum);
    wall.push_back(static_cast<double>(wall_ns) / kNum);
  }
  void report(benchmark::State& state) const {
    auto batches = static_cast<double>(cpu.size());
    state.counters["cpu_ns"] = median(cpu);
    state.counters["caller_ns"] = median(caller);
    state.counters["wall_ns"] = median(wall);
    state.counters["allocs_per_schedule"] = static_cast<double>(allocs) / (batches * kNum);
    state.counters["wakeups_per_batch"] = static_cast<double>(wakeups) / batches;
    state.SetItemsProcessed(state.iterations() * kNum);
  }
};

void cancel_everything_queued() {
  auto& loop = bench_loop();
  loop.submit([&loop] { loop.cancel_scheduled_tasks(); }).get();
}

// One batch from inside the loop; samples null during the warm-up.
void schedule_lots_batch(ShapeSamples* samples) {
  auto& loop = bench_loop();
  std::int64_t cpu = 0;
  std::uint64_t allocs = 0;
  auto t0 = AbstractScheduledEventExecutor::monotonic_nanos();
  loop.submit([&] {
        auto a0 = testing::total_allocations();
        auto c0 = thread_cpu_nanos();
        for (int i = 1; i <= kNum; ++i) loop.schedule(std::chrono::hours(i), [] {});
        cpu = thread_cpu_nanos() - c0;
        allocs = testing::total_allocations() - a0;
      })
      .get();
  auto wall = AbstractScheduledEventExecutor::monotonic_nanos() - t0;
  if (samples) {
    samples->add(cpu, cpu, wall);
    samples->allocs += allocs;
  }
  cancel_everything_queued();
}

void ScheduleFutureTask_scheduleLots(benchmark::State& state) {
  for (int i = 0; i < kWarmupBatches; ++i) schedule_lots_batch(nullptr);
  ShapeSamples samples;
  for (auto _ : state) schedule_lots_batch(&samples);
  samples.report(state);
}
BENCHMARK(ScheduleFutureTask_scheduleLots)->Unit(benchmark::kMillisecond)->Iterations(30);

// One batch from the benchmark's thread, cancelling each task at once when cancel is set.
void outside_batch(bool cancel, ShapeSamples* samples) {
  auto& loop = bench_loop();
  auto wakeups0 = loop.wakeups();
  auto l0 = cpu_nanos(loop_cpu_clock());
  auto a0 = testing::total_allocations();
  auto c0 = thread_cpu_nanos();
  auto t0 = AbstractScheduledEventExecutor::monotonic_nanos();
  if (cancel) {
    for (int i = 1; i <= kNum; ++i) loop.schedule(std::chrono::hours(i), [] {}).cancel();
  } else {
    for (int i = 1; i <= kNum; ++i) loop.schedule(std::chrono::hours(i), [] {});
  }
  auto caller = thread_cpu_nanos() - c0;
  auto wakeups = loop.wakeups() - wakeups0;
  testing::AllocationScope sync_scope;
  auto sync = loop.submit([] {});
  auto sync_allocs = sync_scope.count();  // left out of the count
  sync.get();                             // the loop has taken in every task
  auto wall = AbstractScheduledEventExecutor::monotonic_nanos() - t0;
  auto loop_cpu = cpu_nanos(loop_cpu_clock()) - l0;
  auto allocs = testing::total_allocations() - a0 - sync_allocs;
  if (samples) {
    samples->add(caller + loop_cpu, caller, wall);
    samples->allocs += allocs;
    samples->wakeups += wakeups;
  }
  cancel_everything_queued();
}

void ScheduleFutureTask_scheduleLotsOutsideLoop(benchmark::State& state) {
  for (int i = 0; i < kWarmupBatches; ++i) outside_batch(false, nullptr);
  ShapeSamples samples;
  for (auto _ : state) outside_batch(false, &samples);
  samples.report(state);
}
BENCHMARK(ScheduleFutureTask_scheduleLotsOutsideLoop)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(30);

void ScheduleFutureTask_scheduleCancelLotsOutsideLoop(benchmark::State& state) {
  for (int i = 0; i < kWarmupBatches; ++i) outside_batch(true, nullptr);
  ShapeSamples samples;
  for (auto _ : state) outside_batch(true, &samples);
  samples.report(state);
}
BENCHMARK(ScheduleFutureTask_scheduleCancelLotsOutsideLoop)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(30);

// Netty's ScheduleFutureTaskDeadlineBenchmark: delay_nanos() reads the executor's clock.
void RequestDeadline(benchmark::State& state) {
  auto& loop = bench_loop();
  auto f = loop.schedule(std::chrono::hours(1), [] {});
  AllocCounter allocs;
  for (auto _ : state) benchmark::DoNotOptimize(f.delay_nanos());
  allocs.report(state, 1);
  f.cancel();
}
BENCHMARK(RequestDeadline);

// The baseline: the same subtraction against a direct (non-virtual) steady_clock read.
void RequestDeadlineFixedClock(benchmark::State& state) {
  auto& loop = bench_loop();
  auto f = loop.schedule(std::chrono::hours(1), [] {});
  const std::int64_t deadline = f.deadline_nanos();
  AllocCounter allocs;
  for (auto _ : state) {
    auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
                   .count();
    auto d = deadline - now;
    benchmark::DoNotOptimize(d > 0 ? d : 0);
  }
  allocs.report(state, 1);
  f.cancel();
}
BENCHMARK(RequestDeadlineFixedClock);

// execute() from another thread: throughput of the cross-thread task queue.
void ExecuteCrossThread(benchmark::State& state) {
  auto& loop = bench_loop();
  constexpr int kBatch = 10'000;
  std::uint64_t sink = 0;
  AllocCounter allocs;
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) loop.execute([&sink] { ++sink; });
    loop.submit([] {}).get();
  }
  allocs.report(state, kBatch);
  state.SetItemsProcessed(state.iterations() * kBatch);
  benchmark::DoNotOptimize(sink);
}
BENCHMARK(ExecuteCrossThread)->Unit(benchmark::kMicrosecond);

// Spawn a task on the loop that co_awaits 1000 already-complete futures.
void SpawnAwaitReady(benchmark::State& state) {
  auto& loop = bench_loop();
  constexpr int kAwaits = 1000;
  std::vector<Future<int>> ready;
  for (int i = 0; i < kAwaits; ++i) ready.push_back(make_ready_future<int>(i));
  std::uint64_t awaits_allocs = 0;
  AllocCounter allocs;
  for (auto _ : state) {
    auto f = loop.spawn([](std::vector<Future<int>>& fs, std::uint64_t& a) -> Task<long> {
      long sum = 0;
      testing::AllocationScope scope;
      for (auto& fut : fs) sum += co_await fut;
      a += scope.count();
      co_return sum;
    }(ready, awaits_allocs));
    benchmark::DoNotOptimize(f.get());
  }
  allocs.report(state, kAwaits);
  state.counters["allocs_per_await"] =
      static_cast<double>(awaits_allocs) / (static_cast<double>(state.iterations()) * kAwaits);
  state.SetItemsProcessed(state.iterations() * kAwaits);
}
BENCHMARK(SpawnAwaitReady)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
