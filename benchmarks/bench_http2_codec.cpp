// HTTP/2 codec micro-benchmarks. HPACK: encode and decode the header block of a typical browser
// GET (RFC 7541 C.4's fields plus user-agent, accept and the accept-* fields), with a warm dynamic
// table (the steady state of a connection: every field indexed) and with the table emptied before
// each block (size updates 0 then 4096: every field literal and Huffman-coded again). Frames:
// Http2FrameReader and Http2FrameWriter on a DATA frame of 1 KiB and on the HEADERS frame of that
// GET (warm table), one frame per iteration. allocs_per_op counts operator-new calls per block or
// frame; bytes_per_op is its size. Codec: a steady request/response through Http2FrameCodec
// (server side) on an EmbeddedChannel: the browser GET arrives as one HEADERS frame (warm HPACK
// table on both sides), the application answers with HEADERS (:status 200, END_STREAM) or with
// HEADERS and 1 KiB of DATA; allocs_per_op counts operator-new calls per request.
#include <benchmark/benchmark.h>

#include <string>
#include <string_view>
#include <vector>

#include <trellis/codec/http2/hpack_decoder.hpp>
#include <trellis/codec/http2/hpack_encoder.hpp>
#include <trellis/codec/http2/http2_frame_codec.hpp>
#include <trellis/codec/http2/http2_frame_reader.hpp>
#include <trellis/codec/http2/http2_frame_writer.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;
using namespace trellis::http2;

namespace {

const std::vector<HpackHeader> kBrowserGet = {
    {":method", "GET"},
    {":scheme", "https"},
    {":path", "/index.html"},
    {":authority", "www.example.com"},
    {"cache-control", "no-cache"},
    {"user-agent", "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"},
    {"accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
    {"accept-encoding", "gzip, deflate, br"},
    {"accept-language", "en-US,en;q=0.5"},
};

struct Allocs {
  std::uint64_t start = testing::total_allocations();
  void report(benchmark::State& state) const {
    state.counters["allocs_per_op"] = static_cast<double>(testing::total_allocations() - start) /
                                      static_cast<double>(state.iterations());
  }
};

// cold: empty the table before each block.
void encode(benchmark::State& state, bool cold) {
  HpackEncoder encoder;
  ByteBuf out = ByteBufAllocator::default_allocator().buffer(4096);
  encoder.encode(kBrowserGet, out);
  std::size_t bytes = 0;
  Allocs allocs;
  for (auto _ : state) {
    if (cold) {
      encoder.set_peer_max_table_size(0);
      encoder.set_peer_max_table_size(4096);
    }
    out.clear();
    encoder.encode(kBrowserGet, out);
    bytes = out.readable_bytes();
    benchmark::DoNotOptimize(out.data());
  }
  allocs.report(state);
  state.counters["bytes_per_op"] = static_cast<double>(bytes);
}

void decode(benchmark::State& state, bool cold) {
  HpackEncoder encoder;
  ByteBuf first = ByteBuf::from("");
  encoder.encode(kBrowserGet, first);
  ByteBuf warm = ByteBuf::from("");
  encoder.encode(kBrowserGet, warm);
  const ByteBuf& block = cold ? first : warm;
  // A cold block starts with the updates that empty the table (0, then 4096).
  ByteBuf cold_block = ByteBuf::from(std::string_view("\x20\x3f\xe1\x1f", 4));
  cold_block.write_bytes(first);

  HpackDecoder decoder;
  std::size_t octets = 0;
  auto sink = [&](std::string_view n, std::string_view v, bool) { octets += n.size() + v.size(); };
  decoder.decode(first, sink);
  Allocs allocs;
  for (auto _ : state) decoder.decode(cold ? cold_block : block, sink);
  allocs.report(state);
  benchmark::DoNotOptimize(octets);
  state.counters["bytes_per_op"] =
      static_cast<double>((cold ? cold_block : block).readable_bytes());
}

void BM_HpackEncodeBrowserGetWarm(benchmark::State& state) { encode(state, false); }
void BM_HpackEncodeBrowserGetEmptyTable(benchmark::State& state) { encode(state, true); }
void BM_HpackDecodeBrowserGetWarm(benchmark::State& state) { decode(state, false); }
void BM_HpackDecodeBrowserGetEmptyTable(benchmark::State& state) { decode(state, true); }

Http2Headers browser_get_headers() {
  Http2Headers h;
  for (const auto& f : kBrowserGet) h.add(f.name, f.value, f.sensitive);
  return h;
}

struct FrameCounter : Http2FrameListener {
  std::size_t octets = 0;
  void on_data(Http2DataFrame& f) override { octets += f.data.readable_bytes(); }
  void on_headers(Http2HeadersFrame& f) override { octets += f.headers.size(); }
};

// One frame's bytes as the writer produces them. For HEADERS, `first` gets the first frame (it
// fills the dynamic table) and the result is the second (warm: every field indexed).
ByteBuf one_frame(bool headers, ByteBuf& first) {
  Http2FrameWriter writer;
  CompositeByteBuf out;
  const Http2Headers h = browser_get_headers();
  if (headers) {
    writer.write_headers(out, 1, h, true);
    first = out.consolidate();
    out.clear();
    writer.write_headers(out, 3, h, true);
  } else {
    writer.write_data(out, 1, ByteBuf::from(std::string(1024, 'd')), false);
  }
  return out.consolidate();
}

void frame_decode(benchmark::State& state, bool headers) {
  ByteBuf first;
  ByteBuf wire = one_frame(headers, first);
  Http2FrameReader reader({.check_connection_start = false});
  FrameCounter counter;
  if (headers) reader.read(first, counter);
  reader.read(wire, counter);
  Allocs allocs;
  for (auto _ : state) {
    wire.set_reader_index(0);
    reader.read(wire, counter);
  }
  allocs.report(state);
  benchmark::DoNotOptimize(counter.octets);
  state.counters["bytes_per_op"] = static_cast<double>(wire.writer_index());
}

void frame_encode(benchmark::State& state, bool headers) {
  Http2FrameWriter writer;
  const Http2Headers h = browser_get_headers();
  ByteBuf payload = ByteBuf::from(std::string(1024, 'd'));
  std::size_t bytes = 0;
  auto once = [&] {
    CompositeByteBuf out;
    if (headers) {
      writer.write_headers(out, 1, h, true);
    } else {
      writer.write_data(out, 1, payload.slice(), false);
    }
    bytes = out.readable_bytes();
    benchmark::DoNotOptimize(out.component(0).data());
  };
  once();
  Allocs allocs;
  for (auto _ : state) once();
  allocs.report(state);
  state.counters["bytes_per_op"] = static_cast<double>(bytes);
}

void BM_Http2DecodeData1KiB(benchmark::State& state) { frame_decode(state, false); }
void BM_Http2DecodeHeadersBrowserGet(benchmark::State& state) { frame_decode(state, true); }
void BM_Http2EncodeData1KiB(benchmark::State& state) { frame_encode(state, false); }
void BM_Http2EncodeHeadersBrowserGet(benchmark::State& state) { frame_encode(state, true); }

// The application: answers each request, reusing the request's header list for the response (the
// codec recycles it for the next request's headers, so the steady state allocates nothing).
struct Responder : ChannelInboundHandler {
  ByteBuf body;
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    if (!msg.is<Http2HeadersFrame>()) return;  // SETTINGS
    auto& h = msg.get<Http2HeadersFrame>();
    const std::uint32_t id = h.stream_id;
    h.headers.clear();
    h.headers.add(":status", "200");
    h.end_stream = !body.is_readable();
    ctx.write(std::move(msg));
    if (body.is_readable()) {
      Http2DataFrame d;
      d.stream_id = id;
      d.data = body.slice();
      d.end_stream = true;
      ctx.write(Message(std::move(d)));
    }
    ctx.flush();
  }
};

void codec_request_response(benchmark::State& state, std::size_t body_size) {
  auto responder = std::make_shared<Responder>();
  if (body_size != 0) responder->body = ByteBuf::from(std::string(body_size, 'r'));
  EmbeddedChannel ch{std::make_shared<Http2FrameCodec>(), responder};
  Http2FrameWriter client;
  const Http2Headers get = browser_get_headers();
  CompositeByteBuf start;
  client.write_preface(start);
  // The client's windows are as large as can be, and it gives the connection's back as it goes.
  client.write_settings(start, std::vector<Http2Setting>{{4, kHttp2MaxWindowSize}});
  client.write_settings_ack(start);
  client.write_window_update(start, 0, kHttp2MaxWindowSize - 65535);
  client.write_headers(start, 1, get, true);  // fills both dynamic tables
  ch.write_inbound(start.consolidate());
  // A warm request's frame is the same every time but for its stream id.
  CompositeByteBuf second;
  client.write_headers(second, 3, get, true);
  const ByteBuf request = second.consolidate();
  std::uint32_t id = 3;
  std::size_t bytes_out = 0;
  std::uint64_t received = 0;
  auto once = [&] {
    ByteBuf wire = ByteBufAllocator::default_allocator().buffer(request.readable_bytes());
    wire.write_bytes(request);
    wire.set_u32(5, id);
    id += 2;
    ch.write_inbound(std::move(wire));
    bytes_out = 0;
    while (auto m = ch.read_outbound()) bytes_out += m->get<CompositeByteBuf>().readable_bytes();
    received += body_size;
    if (received >= (1u << 30)) {
      CompositeByteBuf update;
      client.write_window_update(update, 0, static_cast<std::uint32_t>(received));
      ch.write_inbound(update.consolidate());
      received = 0;
    }
    ch.user_events().clear();
  };
  for (int i = 0; i < 100; ++i) once();
  Allocs allocs;
  for (auto _ : state) once();
  allocs.report(state);
  state.counters["bytes_in_per_op"] = static_cast<double>(request.readable_bytes());
  state.counters["bytes_out_per_op"] = static_cast<double>(bytes_out);
}

void BM_Http2CodecServerGet(benchmark::State& state) { codec_request_response(state, 0); }
void BM_Http2CodecServerGet1KiBResponse(benchmark::State& state) {
  codec_request_response(state, 1024);
}

}  // namespace

BENCHMARK(BM_HpackEncodeBrowserGetWarm);
BENCHMARK(BM_HpackEncodeBrowserGetEmptyTable);
BENCHMARK(BM_HpackDecodeBrowserGetWarm);
BENCHMARK(BM_HpackDecodeBrowserGetEmptyTable);
BENCHMARK(BM_Http2DecodeData1KiB);
BENCHMARK(BM_Http2DecodeHeadersBrowserGet);
BENCHMARK(BM_Http2EncodeData1KiB);
BENCHMARK(BM_Http2EncodeHeadersBrowserGet);
BENCHMARK(BM_Http2CodecServerGet);
BENCHMARK(BM_Http2CodecServerGet1KiBResponse);

BENCHMARK_MAIN();
