// bench_replaying_decoder: ReplayingDecoder against the equivalent hand-written
// ByteToMessageDecoder, on length-prefixed frames (4-byte length, 32-byte body) in an
// EmbeddedChannel. "whole": 1,000 frames arrive in one buffer (every read succeeds); "split":
// each frame arrives in two pieces cut in the middle of its body (an attempt per frame is
// abandoned and replayed; the ReplayingDecoder pays a C++ throw there). Counters: ns per frame
// (wall time per iteration / frames) and heap allocations per frame.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <trellis/codec/byte_to_message_decoder.hpp>
#include <trellis/codec/replaying_decoder.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;
using namespace trellis::codec;

namespace {

constexpr int kFrames = 1000;
constexpr std::size_t kBody = 32;

// The hand-written decoder: peek at the length, wait for the whole frame, slice it.
class HandWrittenDecoder final : public ByteToMessageDecoder {
 protected:
  void decode(ChannelHandlerContext&, ByteBuf& in, Out& out) override {
    if (in.readable_bytes() < 4) return;
    const std::uint32_t length = in.get_u32(in.reader_index());
    if (in.readable_bytes() < 4 + std::size_t{length}) return;
    in.skip_bytes(4);
    out.emplace_back(in.read_slice(length));
  }
};

enum class Part { kLength, kBody };

// The same with ReplayingDecoder and a checkpoint after the length.
class CheckpointedDecoder final : public ReplayingDecoder<Part> {
 public:
  CheckpointedDecoder() : ReplayingDecoder(Part::kLength) {}

 protected:
  void decode_replaying(ChannelHandlerContext&, ReplayingByteBuf& in, Out& out) override {
    if (state() == Part::kLength) {
      length_ = in.read_u32();
      checkpoint(Part::kBody);
    }
    out.emplace_back(in.read_slice(length_));
    checkpoint(Part::kLength);
  }

 private:
  std::uint32_t length_ = 0;
};

// The same with ReplayingDecoder and no checkpoint: a replay starts at the length again.
class PlainReplayingDecoder final : public ReplayingDecoder<> {
 protected:
  void decode_replaying(ChannelHandlerContext&, ReplayingByteBuf& in, Out& out) override {
    const std::uint32_t length = in.read_u32();
    out.emplace_back(in.read_slice(length));
  }
};

std::string frames() {
  std::string s;
  for (int i = 0; i < kFrames; ++i) {
    s += std::string("\0\0\0", 3) + static_cast<char>(kBody);
    s += std::string(kBody, static_cast<char>('a' + i % 26));
  }
  return s;
}

std::vector<ByteBuf> pieces(bool split) {
  const std::string all = frames();
  std::vector<ByteBuf> out;
  if (!split) {
    out.push_back(ByteBuf::from(all));
    return out;
  }
  const std::size_t frame = 4 + kBody;
  for (std::size_t at = 0; at < all.size(); at += frame) {
    out.push_back(ByteBuf::from(std::string_view(all).substr(at, 4 + kBody / 2)));
    out.push_back(ByteBuf::from(std::string_view(all).substr(at + 4 + kBody / 2, kBody / 2)));
  }
  return out;
}

template <class Decoder>
void BM_Decode(benchmark::State& state, bool split) {
  EmbeddedChannel ch{std::make_shared<Decoder>()};
  auto& pipeline = ch.pipeline();
  auto& queue = ch.inbound_messages();
  const std::vector<ByteBuf> input = pieces(split);
  auto run = [&] {
    for (const ByteBuf& piece : input) pipeline.fire_channel_read(piece.share());
    std::size_t n = 0;
    while (!queue.empty()) {
      queue.take_front();
      ++n;
    }
    return n;
  };
  if (run() != kFrames) {
    state.SkipWithError("wrong frame count");
    return;
  }
  const auto allocs = testing::total_allocations();
  std::int64_t decoded = 0;
  for (auto _ : state) decoded += static_cast<std::int64_t>(run());
  const auto allocations = testing::total_allocations() - allocs;
  state.SetItemsProcessed(decoded);
  state.counters["ns_per_frame"] = benchmark::Counter(
      static_cast<double>(decoded), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["allocs_per_frame"] =
      static_cast<double>(allocations) / static_cast<double>(decoded);
}

void BM_HandWritten(benchmark::State& state, bool split) {
  BM_Decode<HandWrittenDecoder>(state, split);
}
void BM_ReplayingCheckpointed(benchmark::State& state, bool split) {
  BM_Decode<CheckpointedDecoder>(state, split);
}
void BM_ReplayingPlain(benchmark::State& state, bool split) {
  BM_Decode<PlainReplayingDecoder>(state, split);
}

}  // namespace

BENCHMARK_CAPTURE(BM_HandWritten, whole, false);
BENCHMARK_CAPTURE(BM_ReplayingCheckpointed, whole, false);
BENCHMARK_CAPTURE(BM_ReplayingPlain, whole, false);
BENCHMARK_CAPTURE(BM_HandWritten, split, true);
BENCHMARK_CAPTURE(BM_ReplayingCheckpointed, split, true);
BENCHMARK_CAPTURE(BM_ReplayingPlain, split, true);

BENCHMARK_MAIN();
