// Scheduling benchmarks on the Asio EventLoop: ports of Netty's ScheduleFutureTaskBenchmark and
// ScheduleFutureTaskDeadlineBenchmark, plus cross-thread execute and await of ready futures.
// Every benchmark reports allocs_per_op, counted by the linked operator-new hook.
#include <benchmark/benchmark.h>

#include <time.h>

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
