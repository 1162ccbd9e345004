// Blocking sections on a WorkStealingPool (ports of cats-effect's BlockingBenchmark) and from an
// EventLoop. Each benchmark runs one task of `size` steps on a fresh pool; /InPlace uses the
// worker-role hand-off, /Shift the naive design (a hop to a blocker thread and back per section).
// Counters: threads_created (after warm-up), blocker_threads (alive at the end, workers
// included), allocs (per iteration, all threads).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>

#include <trellis/pipeline.hpp>
#include <trellis/pipeline/blocking.hpp>
#include <trellis/pipeline/work_stealing_pool.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/transport.hpp>

using namespace trellis;

namespace {
constexpr int kSize = 10000;
constexpr int kWarmUpRuns = 3;
constexpr auto kWarmUpTime = std::chrono::milliseconds(300);

Task<int> step() { co_return 42; }

// A call the compiler cannot see through or drop.
[[gnu::noinline]] int trivial(int x) {
  asm volatile("" : "+r"(x));
  return x + 1;
}

Task<int> baseline(int n) {
  int sum = 0;
  for (int i = 0; i < n; ++i) sum += co_await step();
  co_return sum;
}

Task<int> fine(int n) {
  int sum = 0;
  for (int i = 0; i < n; ++i) sum += co_await blocking([] { return 42; });
  co_return sum;
}

Task<int> coarse(int n) {
  auto fn = [n] {
    int x = 0;
    for (int i = 0; i < n; ++i) x = trivial(x);
    return x;
  };
  co_return co_await blocking(fn);
}

Task<int> nested(int n) {
  auto fn = [n] {
    int x = 0;
    for (int i = 0; i < n; ++i) x = blocking_section([x] { return trivial(x); });
    return x;
  };
  co_return co_await blocking(fn);
}

Task<int> block_then_cede(int n) {
  int sum = 0;
  for (int i = 0; i < n; ++i) {
    sum += co_await blocking([] { return 42; });
    co_await yield();
  }
  co_return sum;
}

using Body = Task<int> (*)(int);

void on_pool(benchmark::State& state, Body body, bool in_place) {
  int n = static_cast<int>(state.range(0));
  WorkStealingPool::Options options;
  options.in_place_blocking = in_place;
  WorkStealingPool pool(options);
  // Warm-up: blocker threads, job nodes, allocator caches. The cache grows to its working set
  // (the workers, a replacement in flight, a spare) only when a rare race needs it, so warm up
  // for a while rather than a fixed count.
  auto warm_until = std::chrono::steady_clock::now() + kWarmUpTime;
  for (int i = 0; i < kWarmUpRuns || std::chrono::steady_clock::now() < warm_until; ++i) {
    pool.spawn(body(n)).get();
  }
  auto created = pool.blocker_threads_created();
  auto hand_offs = pool.hand_offs();
  auto allocs = testing::total_allocations();
  for (auto _ : state) benchmark::DoNotOptimize(pool.spawn(body(n)).get());
  auto iterations = static_cast<double>(state.iterations());
  state.counters["threads_created"] = static_cast<double>(pool.blocker_threads_created() - created);
  state.counters["allocs"] =
      static_cast<double>(testing::total_allocations() - allocs) / iterations;
  state.counters["blocker_threads"] = static_cast<double>(pool.live_blocker_threads());
  state.counters["hand_offs"] = static_cast<double>(pool.hand_offs() - hand_offs) / iterations;
  state.SetItemsProcessed(state.iterations() * n);
}

void loop_blocking(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  EventLoop loop("bench-loop");
  auto& cache = default_blocker_cache();
  for (int i = 0; i < kWarmUpRuns; ++i) loop.spawn(fine(n)).get();  // warm-up
  auto created = cache.threads_created();
  auto allocs = testing::total_allocations();
  for (auto _ : state) benchmark::DoNotOptimize(loop.spawn(fine(n)).get());
  auto iterations = static_cast<double>(state.iterations());
  state.counters["threads_created"] = static_cast<double>(cache.threads_created() - created);
  state.counters["blocker_threads"] = static_cast<double>(cache.live_threads());
  state.counters["allocs"] =
      static_cast<double>(testing::total_allocations() - allocs) / iterations;
  state.counters["ns_per_section"] = benchmark::Counter(
      static_cast<double>(n) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(state.iterations() * n);
}

const bool kRegistered = [] {
  struct Case {
    const char* name;
    Body body;
  };
  for (auto [name, body] : {Case{"Baseline", baseline}, Case{"Fine", fine}, Case{"Coarse", coarse},
                            Case{"Nested", nested}, Case{"BlockThenCede", block_then_cede}}) {
    for (bool in_place : {true, false}) {
      auto full = std::string(name) + (in_place ? "/InPlace" : "/Shift");
      benchmark::RegisterBenchmark(full.c_str(), on_pool, body, in_place)
          ->Arg(kSize)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::RegisterBenchmark("LoopBlocking", loop_blocking)
      ->Arg(kSize)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  return true;
}();
}  // namespace

BENCHMARK_MAIN();
