// Buffer benchmarks: allocate+write+free through the pooled and unpooled allocators against plain
// new[]/delete[], and u32 reads through slices, an 8-component composite and one contiguous
// ByteBuf. allocs_per_op counts operator-new calls per iteration (all threads).
#include <benchmark/benchmark.h>

#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/pipeline/pooled_byte_buf_allocator.hpp>
#include <trellis/pipeline/unpooled_byte_buf_allocator.hpp>
#include <trellis/testing/allocation_counter.hpp>

#include <cstring>
#include <vector>

namespace {

using trellis::ByteBuf;
using trellis::CompositeByteBuf;

// Reports operator-new calls per iteration, measured across the benchmark loop.
class AllocsPerOp {
 public:
  explicit AllocsPerOp(benchmark::State& state)
      : state_(state), start_(trellis::testing::total_allocations()) {}
  ~AllocsPerOp() {
    state_.counters["allocs_per_op"] =
        benchmark::Counter(static_cast<double>(trellis::testing::total_allocations() - start_),
                           benchmark::Counter::kAvgIterations);
  }

 private:
  benchmark::State& state_;
  std::uint64_t start_;
};

const std::vector<std::byte>& payload() {
  static const std::vector<std::byte> bytes(64 * 1024, std::byte{0x5a});
  return bytes;
}

void alloc_write_free(benchmark::State& state, trellis::ByteBufAllocator& alloc) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const std::span<const std::byte> data(payload().data(), size);
  AllocsPerOp allocs(state);
  for (auto _ : state) {
    ByteBuf buf = alloc.buffer(size);
    buf.write_bytes(data);
    benchmark::DoNotOptimize(buf.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

void BM_AllocWriteFree_Pooled(benchmark::State& state) {
  static trellis::PooledByteBufAllocator alloc;
  alloc_write_free(state, alloc);
}

void BM_AllocWriteFree_Unpooled(benchmark::State& state) {
  static trellis::UnpooledByteBufAllocator alloc;
  alloc_write_free(state, alloc);
}

void BM_AllocWriteFree_NewDelete(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const std::byte* data = payload().data();
  AllocsPerOp allocs(state);
  for (auto _ : state) {
    auto* p = new std::byte[size];
    std::memcpy(p, data, size);
    benchmark::DoNotOptimize(p);
    benchmark::ClobberMemory();
    delete[] p;
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

constexpr std::size_t kReadBytes = 8 * 510;  // 510-byte components: some u32s straddle two
constexpr std::size_t kReadU32s = kReadBytes / 4;

ByteBuf filled(std::size_t size) {
  ByteBuf buf = ByteBuf::from(std::span<const std::byte>(payload().data(), size));
  for (std::size_t i = 0; i < size; ++i) buf.set_u8(i, static_cast<std::uint8_t>(i));
  return buf;
}

// Reads 64-byte frames as slices of one buffer, then the 16 u32s of each frame.
void BM_SliceRead(benchmark::State& state) {
  ByteBuf source = filled(4096);
  AllocsPerOp allocs(state);
  for (auto _ : state) {
    source.set_reader_index(0);
    std::uint32_t sum = 0;
    while (source.is_readable()) {
      ByteBuf frame = source.read_slice(64);
      for (int i = 0; i < 16; ++i) sum += frame.read_u32();
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1024);
}

void BM_ReadU32_Contiguous(benchmark::State& state) {
  ByteBuf buf = filled(kReadBytes);
  AllocsPerOp allocs(state);
  for (auto _ : state) {
    buf.set_reader_index(0);
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < kReadU32s; ++i) sum += buf.read_u32();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kReadU32s));
}

void BM_ReadU32_Composite8(benchmark::State& state) {
  ByteBuf whole = filled(kReadBytes);
  CompositeByteBuf comp;
  for (std::size_t i = 0; i < 8; ++i) comp.add_component(whole.slice(i * 510, 510));
  AllocsPerOp allocs(state);
  for (auto _ : state) {
    comp.set_reader_index(0);
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < kReadU32s; ++i) sum += comp.read_u32();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kReadU32s));
}

}  // namespace

BENCHMARK(BM_AllocWriteFree_Pooled)
    ->Name("BM_AllocWriteFree/Pooled")
    ->Arg(256)
    ->Arg(4096)
    ->Arg(65536);
BENCHMARK(BM_AllocWriteFree_Unpooled)
    ->Name("BM_AllocWriteFree/Unpooled")
    ->Arg(256)
    ->Arg(4096)
    ->Arg(65536);
BENCHMARK(BM_AllocWriteFree_NewDelete)
    ->Name("BM_AllocWriteFree/NewDelete")
    ->Arg(256)
    ->Arg(4096)
    ->Arg(65536);
BENCHMARK(BM_SliceRead);
BENCHMARK(BM_ReadU32_Contiguous);
BENCHMARK(BM_ReadU32_Composite8);

BENCHMARK_MAIN();
