// WebSocket frame codec micro-benchmarks, on an embedded channel (the pipeline hops included).
// Decode: masked client frames of 64 B (32 per read) and 16 KiB (one per read) through
// WebSocketFrameDecoder as a server; each iteration first copies the wire bytes into a pooled
// buffer, as a socket read would, since the decoder unmasks in place. Encode: frames of 64 B and
// 16 KiB through WebSocketFrameEncoder as a client (masked: a small payload is masked into the
// header buffer, a large one in place) and as a server (unmasked: header buffer plus the payload
// untouched). Mask: websocket_mask over 16 KiB and 1 MiB (bytes_per_second). ns_per_frame is the
// time per frame; allocs_per_frame counts operator-new calls per frame once warm.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include <trellis/codec/websocket.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;
using namespace trellis::websocket;

namespace {

struct Allocs {
  std::uint64_t start = testing::total_allocations();
  void report(benchmark::State& state, double frames) const {
    state.counters["allocs_per_frame"] =
        static_cast<double>(testing::total_allocations() - start) / frames;
    state.counters["ns_per_frame"] = benchmark::Counter(
        frames * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  }
};

// The wire bytes of `count` masked binary frames of `size` bytes (as a client sends them).
std::string client_frames(std::size_t size, std::size_t count) {
  EmbeddedChannel ch{std::make_shared<WebSocketFrameEncoder>(WebSocketRole::kClient)};
  for (std::size_t i = 0; i < count; ++i) {
    ch.write_outbound(BinaryWebSocketFrame(ByteBuf::from(std::string(size, 'w'))));
  }
  std::string wire;
  while (auto buf = ch.read_outbound<ByteBuf>()) wire += buf->to_string();
  return wire;
}

class InboundSink : public ChannelInboundHandler {
 public:
  void channel_read(ChannelHandlerContext&, Message msg) override {
    bytes += websocket_frame_of(msg)->payload.readable_bytes();
  }
  std::size_t bytes = 0;
};

void decode(benchmark::State& state, std::size_t size, std::size_t per_read) {
  const std::string wire = client_frames(size, per_read);
  auto sink = std::make_shared<InboundSink>();
  EmbeddedChannel ch{std::make_shared<WebSocketFrameDecoder>(WebSocketRole::kServer), sink};
  ByteBufAllocator& alloc = ByteBufAllocator::default_allocator();
  const auto bytes = std::as_bytes(std::span<const char>(wire.data(), wire.size()));
  for (int i = 0; i < 100; ++i) {
    ByteBuf in = alloc.buffer(wire.size());
    in.write_bytes(bytes);
    ch.write_inbound(std::move(in));
  }
  Allocs allocs;
  for (auto _ : state) {
    ByteBuf in = alloc.buffer(wire.size());
    in.write_bytes(bytes);
    ch.write_inbound(std::move(in));
  }
  const double frames = static_cast<double>(state.iterations() * per_read);
  allocs.report(state, frames);
  benchmark::DoNotOptimize(sink->bytes);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * wire.size()));
}

// Takes the encoder's output; keeps the last large payload so the benchmark can send it again
// (held alone, so a client encoder masks it in place, as it would an application's buffer).
class OutboundSink : public ChannelOutboundHandler {
 public:
  void write(ChannelHandlerContext&, Message msg, ChannelPromise promise) override {
    auto& buf = msg.get<ByteBuf>();
    bytes += buf.readable_bytes();
    if (buf.readable_bytes() > WebSocketFrameEncoder::kMaskCopyThreshold)
      returned = msg.take<ByteBuf>();
    promise.try_set_value();
  }
  std::size_t bytes = 0;
  ByteBuf returned;
};

void encode(benchmark::State& state, std::size_t size, WebSocketRole role) {
  auto sink = std::make_shared<OutboundSink>();
  EmbeddedChannel ch{sink, std::make_shared<WebSocketFrameEncoder>(role)};
  const ByteBuf small = ByteBuf::from(std::string(size, 'e'));
  const bool large = size > WebSocketFrameEncoder::kMaskCopyThreshold;
  sink->returned = ByteBuf::from(std::string(size, 'e'));
  auto next_payload = [&] { return large ? std::move(sink->returned) : small.share(); };
  for (int i = 0; i < 100; ++i) ch.write(BinaryWebSocketFrame(next_payload()));
  ch.flush_outbound();
  Allocs allocs;
  for (auto _ : state) ch.write(BinaryWebSocketFrame(next_payload()));
  allocs.report(state, static_cast<double>(state.iterations()));
  benchmark::DoNotOptimize(sink->bytes);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}

void mask(benchmark::State& state, std::size_t size) {
  std::vector<std::byte> data(size, std::byte{0x5a});
  const WebSocketMaskKey key = next_websocket_mask_key();
  for (auto _ : state) {
    websocket_mask(data, key);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}

}  // namespace

BENCHMARK_CAPTURE(decode, Masked64B_32PerRead, 64, 32);
BENCHMARK_CAPTURE(decode, Masked16KiB, 16384, 1);
BENCHMARK_CAPTURE(encode, Masked64B, 64, WebSocketRole::kClient);
BENCHMARK_CAPTURE(encode, Masked16KiB, 16384, WebSocketRole::kClient);
BENCHMARK_CAPTURE(encode, Unmasked64B, 64, WebSocketRole::kServer);
BENCHMARK_CAPTURE(encode, Unmasked16KiB, 16384, WebSocketRole::kServer);
BENCHMARK_CAPTURE(mask, 16KiB, 16384);
BENCHMARK_CAPTURE(mask, 1MiB, 1 << 20);

BENCHMARK_MAIN();
