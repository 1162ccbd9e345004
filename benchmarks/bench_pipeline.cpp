// bench_pipeline: the cost of moving messages through a channel pipeline. 1M ByteBuf messages
// per iteration go through N pass-through handlers on an EmbeddedChannel; the counters report
// ns per message, ns per handler hop ((t(N) - t(0)) / N, so the queue at the tail is not
// counted) and heap allocations per message (the target is 0 in steady state). The ns counters
// are thread CPU time.
#include <benchmark/benchmark.h>

#include <time.h>

#include <chrono>
#include <memory>

#include <trellis/pipeline/channel.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;

namespace {

constexpr int kMessages = 1'000'000;

class PassThroughInbound final : public ChannelInboundHandler {
 public:
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    ctx.fire_channel_read(std::move(msg));
  }
};

class PassThroughDuplex final : public ChannelDuplexHandler {
 public:
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    ctx.fire_channel_read(std::move(msg));
  }
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override {
    ctx.write(std::move(msg), std::move(promise));
  }
};

template <class H>
void add_handlers(EmbeddedChannel& ch, int n) {
  for (int i = 0; i < n; ++i) ch.pipeline().add_last(std::make_shared<H>());
}

// CPU time of this thread: on a shared machine it is steadier than wall time.
std::int64_t thread_cpu_nanos() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Sends kMessages reads through ch, recycling one ByteBuf; returns the thread CPU nanoseconds.
std::int64_t read_loop(EmbeddedChannel& ch, ByteBuf& buf) {
  auto& pipeline = ch.pipeline();
  auto& queue = ch.inbound_messages();
  const auto start = thread_cpu_nanos();
  for (int i = 0; i < kMessages; ++i) {
    pipeline.fire_channel_read(std::move(buf));
    buf = queue.take_front().take<ByteBuf>();
  }
  return thread_cpu_nanos() - start;
}

void BM_ChannelReadThroughHandlers(benchmark::State& state) {
  const int handlers = static_cast<int>(state.range(0));
  EmbeddedChannel ch;
  add_handlers<PassThroughInbound>(ch, handlers);
  EmbeddedChannel baseline;
  auto buf = ByteBufAllocator::default_allocator().buffer(256);
  buf.write_string("a message of a few bytes");
  read_loop(ch, buf);  // warm-up: the tail queue reaches its working size
  read_loop(baseline, buf);

  std::int64_t total_ns = 0;
  std::int64_t baseline_ns = 0;
  std::uint64_t allocations = 0;
  for (auto _ : state) {
    testing::AllocationScope scope;
    total_ns += read_loop(ch, buf);
    allocations += scope.count();
    state.PauseTiming();
    baseline_ns += read_loop(baseline, buf);
    state.ResumeTiming();
  }
  const double messages = static_cast<double>(state.iterations()) * kMessages;
  state.SetItemsProcessed(static_cast<std::int64_t>(messages));
  state.counters["ns_per_msg"] = static_cast<double>(total_ns) / messages;
  state.counters["allocs_per_msg"] = static_cast<double>(allocations) / messages;
  if (handlers > 0) {
    state.counters["ns_per_hop"] =
        static_cast<double>(total_ns - baseline_ns) / messages / handlers;
  }
}
BENCHMARK(BM_ChannelReadThroughHandlers)
    ->Arg(0)
    ->Arg(1)
    ->Arg(4)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->MinTime(1.0);

// The full test-kit round trip: write_inbound (read + read_complete + auto-read request,
// pending tasks, exception check) and read_inbound, through 4 pass-through handlers.
void BM_WriteInboundRoundTrip(benchmark::State& state) {
  EmbeddedChannel ch;
  add_handlers<PassThroughInbound>(ch, 4);
  auto buf = ByteBuf::from("a message of a few bytes");
  for (int i = 0; i < 64; ++i) {
    ch.write_inbound(std::move(buf));
    buf = *ch.read_inbound<ByteBuf>();
  }
  std::uint64_t allocations = 0;
  for (auto _ : state) {
    testing::AllocationScope scope;
    ch.write_inbound(std::move(buf));
    buf = *ch.read_inbound<ByteBuf>();
    allocations += scope.count();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["allocs_per_msg"] =
      benchmark::Counter(static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_WriteInboundRoundTrip);

// write + flush through 4 pass-through duplex handlers into the outbound buffer and out.
void BM_WriteAndFlushThroughHandlers(benchmark::State& state) {
  EmbeddedChannel ch;
  add_handlers<PassThroughDuplex>(ch, 4);
  auto buf = ByteBuf::from("a message of a few bytes");
  auto& queue = ch.outbound_messages();
  for (int i = 0; i < 64; ++i) {
    ch.write_and_flush(std::move(buf));
    buf = queue.take_front().take<ByteBuf>();
  }
  std::uint64_t allocations = 0;
  for (auto _ : state) {
    testing::AllocationScope scope;
    ch.write_and_flush(std::move(buf));
    buf = queue.take_front().take<ByteBuf>();
    allocations += scope.count();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["allocs_per_msg"] =
      benchmark::Counter(static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_WriteAndFlushThroughHandlers);

}  // namespace

BENCHMARK_MAIN();
