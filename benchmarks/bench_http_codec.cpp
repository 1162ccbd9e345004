// HTTP/1.1 codec micro-benchmarks: parse a typical ~300-byte browser GET and a 10-header POST
// (the bare parser, whole or in two reads, and the whole HttpServerCodec on an EmbeddedChannel),
// encode a response, and run the HTTP echo example's whole pipeline (codec, keep-alive,
// aggregator, handler) on wrk's requests, one per read or 16 pipelined.
// allocs_per_op counts operator-new calls per request.
#include <benchmark/benchmark.h>

#include <string>

#include <trellis/http.hpp>
#include <trellis/pipeline.hpp>
#include <trellis/testing.hpp>

#include "http_echo_handler.hpp"

using namespace trellis;
using namespace trellis::http;

namespace {
const std::string kBrowserGet =
    "GET /plaintext HTTP/1.1\r\n"
    "Host: server.example.com:8080\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0\r\n"
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n"
    "Accept-Language: en-US,en;q=0.5\r\n"
    "Accept-Encoding: gzip, deflate\r\n"
    "Connection: keep-alive\r\n"
    "\r\n";

const std::string kPost =
    "POST /api/v1/items HTTP/1.1\r\n"
    "Host: api.example.com\r\n"
    "User-Agent: trellis-bench/1.0\r\n"
    "Accept: application/json\r\n"
    "Content-Type: application/json\r\n"
    "Content-Length: 27\r\n"
    "Authorization: Bearer abcdef0123456789\r\n"
    "X-Request-Id: 5f2b8c1e-7d3a-4e0b-9c6f\r\n"
    "X-Forwarded-For: 10.0.0.1\r\n"
    "Cache-Control: no-cache\r\n"
    "Cookie: session=abc123; theme=dark\r\n"
    "\r\n"
    "{\"name\":\"widget\",\"qty\":10}\n";

struct Allocs {
  std::uint64_t start = testing::total_allocations();
  void report(benchmark::State& state) const {
    state.counters["allocs_per_op"] = static_cast<double>(testing::total_allocations() - start) /
                                      static_cast<double>(state.iterations());
  }
};

void parse_with_parser(benchmark::State& state, const std::string& wire) {
  HttpParser parser(HttpParser::Kind::kRequest);
  auto source = ByteBuf::from(wire);
  Allocs allocs;
  for (auto _ : state) {
    auto in = source.share();
    for (;;) {
      auto e = parser.parse(in);
      if (std::holds_alternative<std::monostate>(e)) break;
      benchmark::DoNotOptimize(e);
    }
  }
  allocs.report(state);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * wire.size()));
}

// The HTTP client's URL parser on the URL of a plaintext benchmark (host and target fit the
// small-string buffer: 0 allocations expected).
void UrlParsePlaintext(benchmark::State& state) {
  Allocs allocs;
  for (auto _ : state) {
    Url url = Url::parse("http://127.0.0.1:8080/plaintext");
    benchmark::DoNotOptimize(url);
  }
  allocs.report(state);
}
BENCHMARK(UrlParsePlaintext);

void ParseBrowserGet(benchmark::State& state) { parse_with_parser(state, kBrowserGet); }
BENCHMARK(ParseBrowserGet);
void ParsePost10Headers(benchmark::State& state) { parse_with_parser(state, kPost); }
BENCHMARK(ParsePost10Headers);

// The browser GET arriving in two reads (split in the User-Agent line) into one reused
// cumulation buffer: the second parse resumes the scan where the first one stopped.
void ParseBrowserGetInTwoReads(benchmark::State& state) {
  HttpParser parser(HttpParser::Kind::kRequest);
  const std::string_view wire = kBrowserGet;
  const std::size_t split = wire.find("Gecko");
  ByteBuf cumulation = ByteBufAllocator::default_allocator().buffer(wire.size());
  Allocs allocs;
  for (auto _ : state) {
    cumulation.clear();
    cumulation.write_string(wire.substr(0, split));
    benchmark::DoNotOptimize(parser.parse(cumulation));
    cumulation.write_string(wire.substr(split));
    for (;;) {
      auto e = parser.parse(cumulation);
      if (std::holds_alternative<std::monostate>(e)) break;
      benchmark::DoNotOptimize(e);
    }
  }
  allocs.report(state);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * wire.size()));
}
BENCHMARK(ParseBrowserGetInTwoReads);

// The whole inbound path of a server connection: ByteBuf in, HttpRequest + LastHttpContent out.
void codec_decode(benchmark::State& state, const std::string& wire) {
  EmbeddedChannel ch{std::make_shared<HttpServerCodec>()};
  auto source = ByteBuf::from(wire);
  Allocs allocs;
  for (auto _ : state) {
    ch.write_inbound(source.share());
    while (auto m = ch.read_inbound<Message>()) benchmark::DoNotOptimize(*m);
  }
  allocs.report(state);
}
void CodecDecodeBrowserGet(benchmark::State& state) { codec_decode(state, kBrowserGet); }
BENCHMARK(CodecDecodeBrowserGet);
void CodecDecodePost10Headers(benchmark::State& state) { codec_decode(state, kPost); }
BENCHMARK(CodecDecodePost10Headers);

// Encode the hello response (head + body in one gathering message).
void EncodeHelloResponse(benchmark::State& state) {
  EmbeddedChannel ch{std::make_shared<HttpResponseEncoder>()};
  Allocs allocs;
  for (auto _ : state) {
    FullHttpResponse r;
    r.headers.add(HeaderId::kContentType, "text/plain");
    r.content = ByteBuf::from("Hello, World!");
    ch.write_outbound(std::move(r));
    // Every outbound message (the encoder may write the head and the body separately), so the
    // channel's outbound queue does not grow across iterations.
    while (auto m = ch.read_outbound<Message>()) benchmark::DoNotOptimize(*m);
  }
  allocs.report(state);
}
BENCHMARK(EncodeHelloResponse);

// What wrk sends for GET /plaintext.
const std::string kWrkGet = "GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";

// The example server's pipeline answering `depth` requests that arrive in one read: the
// user-space work of a server connection per request, without the socket. ns per request.
void echo_pipeline(benchmark::State& state, int depth) {
  EmbeddedChannel ch;
  examples::init_http_echo_pipeline(ch);
  std::string wire;
  for (int i = 0; i < depth; ++i) wire += kWrkGet;
  auto source = ByteBuf::from(wire);
  std::size_t bytes = 0;
  Allocs allocs;
  for (auto _ : state) {
    ch.write_inbound(source.share());
    while (auto m = ch.read_outbound<ByteBuf>()) bytes += m->readable_bytes();
  }
  allocs.report(state);
  state.counters["allocs_per_op"] /= depth;
  state.counters["response_bytes"] =
      static_cast<double>(bytes) / static_cast<double>(state.iterations() * depth);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * depth);
}
void EchoPipelineOneRequest(benchmark::State& state) { echo_pipeline(state, 1); }
BENCHMARK(EchoPipelineOneRequest);
void EchoPipeline16Pipelined(benchmark::State& state) { echo_pipeline(state, 16); }
BENCHMARK(EchoPipeline16Pipelined);

}  // namespace

BENCHMARK_MAIN();
