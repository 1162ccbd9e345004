// The code of the "Compression" sections of docs/codecs.md and docs/http.md, compiled and run
// (the ctests docs.compression_snippets and docs.http_compression_snippets check that the
// documents' code blocks are these lines).
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include <trellis/codec.hpp>
#include <trellis/http.hpp>
#include <trellis/testing/doctest_helpers.hpp>

using namespace trellis;
using namespace trellis::codec;
using namespace trellis::http;

TEST_CASE("docs: a gzip stream in both directions, with decompression limits") {
  EmbeddedChannel ch;
  DecompressionLimits limits;
  limits.max_output_bytes = 16 << 20;  // at most 16 MiB per stream
  limits.max_ratio = 100;              // and 100 bytes out per byte in, past the first MiB
  ch.pipeline().add_last("gunzip", std::make_shared<ZlibDecoder>(ZlibWrapper::kGzip, limits));
  ch.pipeline().add_last("gzip", std::make_shared<ZlibEncoder>(ZlibWrapper::kGzip, 6));

  ch.write_outbound(ByteBuf::from("hello"));  // flush: a complete block goes out
  const std::string wire = testing::drain_outbound_bytes(ch);
  ch.write_inbound(ByteBuf::from(wire));
  CHECK(testing::read_inbound_string(ch) == "hello");
}

TEST_CASE("docs: HttpContentCompressor and HttpContentDecompressor in a server pipeline") {
  EmbeddedChannel ch;
  ch.pipeline().add_last("codec", std::make_shared<HttpServerCodec>());
  HttpContentCompressor::Options options;
  options.min_body_bytes = 512;     // smaller bodies are sent as they are
  options.codings.deflate = false;  // offer br, zstd and gzip only
  ch.pipeline().add_after("codec", "compressor", std::make_shared<HttpContentCompressor>(options));
  auto decompressor = std::make_shared<HttpContentDecompressor>();
  ch.pipeline().add_after("compressor", "decompressor", decompressor);
  ch.pipeline().add_last("aggregator", std::make_shared<HttpObjectAggregator>(1 << 20));

  ch.write_inbound(
      ByteBuf::from("GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, deflate\r\n\r\n"));
  auto request = ch.read_inbound<FullHttpRequest>();
  REQUIRE(request);
  FullHttpResponse response;
  response.headers.add(HeaderId::kContentType, "text/plain");
  response.content = ByteBuf::from(std::string(2000, 'a'));
  ch.write_outbound(std::move(response));
  const std::string wire = testing::drain_outbound_bytes(ch);
  CHECK(wire.find("Content-Encoding: gzip\r\n") != std::string::npos);
  CHECK(wire.find("Vary: Accept-Encoding\r\n") != std::string::npos);
}
