// Tests of HTTP content compression: Accept-Encoding negotiation, HttpContentCompressor (full and
// streamed responses, pipelining, what is skipped) and HttpContentDecompressor (full and
// streamed bodies, limits), on EmbeddedChannel.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <trellis/codec/compression.hpp>
#include <trellis/codec/http/http_content_compressor.hpp>
#include <trellis/codec/http/http_content_decompressor.hpp>
#include <trellis/http.hpp>
#include <trellis/testing/doctest_helpers.hpp>

#include "compression_test_support.hpp"

namespace {

using namespace trellis;
using namespace trellis::http;
using trellis::codec::DecompressionLimitError;
using trellis::codec::DecompressionLimits;

FullHttpRequest request(std::optional<std::string_view> accept_encoding,
                        HttpMethod method = HttpMethod::kGet) {
  FullHttpRequest r;
  r.method = method;
  r.target = "/";
  if (accept_encoding) r.headers.add(HeaderId::kAcceptEncoding, *accept_encoding);
  return r;
}

FullHttpResponse response(const std::string& body, std::string_view type = "application/json",
                          std::uint16_t status = 200) {
  FullHttpResponse r;
  r.status.code = status;
  if (!type.empty()) r.headers.add(HeaderId::kContentType, type);
  r.headers.add(HeaderId::kContentLength, std::to_string(body.size()));
  r.content = ByteBuf::from(body);
  return r;
}

std::string decode_as(std::string_view coding, const std::string& bytes) {
  if (coding == "gzip") return compression_test::zlib_inflate(bytes, 31);
  if (coding == "deflate") return compression_test::zlib_inflate(bytes, 15);
  if (coding == "br") return compression_test::brotli_decompress(bytes);
  if (coding == "zstd") return compression_test::zstd_decompress(bytes);
  return bytes;
}

// One request in, one response out through a fresh compressor; the response as written on.
FullHttpResponse exchange(FullHttpRequest req, FullHttpResponse resp,
                          HttpContentCompressor::Options options = {}) {
  EmbeddedChannel ch{std::make_shared<HttpContentCompressor>(options)};
  ch.write_inbound(std::move(req));
  REQUIRE(ch.read_inbound<FullHttpRequest>());
  ch.write_outbound(std::move(resp));
  auto out = ch.read_outbound<FullHttpResponse>();
  REQUIRE(out);
  return std::move(*out);
}

std::string field_of(const HttpHeaders& h, std::string_view name) {
  auto v = h.get(name);
  return v ? std::string(*v) : std::string("<none>");
}

}  // namespace

TEST_CASE(
    "select_content_coding honours q-values, q=0, * and the br > zstd > gzip > deflate order") {
  CHECK(select_content_coding(std::nullopt) == ContentCoding::kIdentity);
  CHECK(select_content_coding("") == ContentCoding::kIdentity);
  CHECK(select_content_coding("gzip") == ContentCoding::kGzip);
  CHECK(select_content_coding("x-gzip") == ContentCoding::kGzip);
  CHECK(select_content_coding("gzip, deflate, br, zstd") == ContentCoding::kBrotli);
  CHECK(select_content_coding("deflate, gzip") == ContentCoding::kGzip);
  CHECK(select_content_coding("gzip, zstd") == ContentCoding::kZstd);
  CHECK(select_content_coding("gzip;q=1.0, br;q=0.5") == ContentCoding::kGzip);
  CHECK(select_content_coding("br;q=0, gzip") == ContentCoding::kGzip);
  CHECK(select_content_coding("br;q=0, gzip;q=0, deflate;q=0, zstd;q=0") ==
        ContentCoding::kIdentity);
  CHECK(select_content_coding("*") == ContentCoding::kBrotli);
  CHECK(select_content_coding("*;q=0") == ContentCoding::kIdentity);
  CHECK(select_content_coding("*;q=0, gzip") == ContentCoding::kGzip);
  CHECK(select_content_coding("br;q=0, *;q=0.3") == ContentCoding::kZstd);
  CHECK(select_content_coding("identity") == ContentCoding::kIdentity);
  CHECK(select_content_coding("compress, sdch") == ContentCoding::kIdentity);
  CHECK(select_content_coding(" GZIP ; Q=0.8 , deflate;q=0.9") == ContentCoding::kDeflate);
  CHECK(select_content_coding("gzip;q=2, deflate") == ContentCoding::kDeflate);  // bad q: ignored
  ContentCodings only_gzip{.br = false, .zstd = false, .gzip = true, .deflate = false};
  CHECK(select_content_coding("br, zstd, gzip", only_gzip) == ContentCoding::kGzip);
  CHECK(select_content_coding("br, zstd", only_gzip) == ContentCoding::kIdentity);
}

TEST_CASE("HttpContentCompressor compresses a full response with the coding the request accepts") {
  const std::string body = compression_test::json_body(20'000);
  for (std::string_view coding : {"br", "zstd", "gzip", "deflate"}) {
    CAPTURE(coding);
    auto out = exchange(request(coding), response(body));
    CHECK(field_of(out.headers, "Content-Encoding") == coding);
    CHECK(field_of(out.headers, "Vary") == "Accept-Encoding");
    CHECK(field_of(out.headers, "Content-Length") == std::to_string(out.content.readable_bytes()));
    CHECK(out.content.readable_bytes() < body.size() / 3);
    CHECK(decode_as(coding, out.content.to_string()) == body);
  }
}

TEST_CASE("HttpContentCompressor leaves responses it must not compress as they are") {
  const std::string body = compression_test::json_body(20'000);
  SUBCASE("no Accept-Encoding: identity, but Vary says it could differ") {
    auto out = exchange(request(std::nullopt), response(body));
    CHECK_FALSE(out.headers.contains(HeaderId::kContentEncoding));
    CHECK(field_of(out.headers, "Vary") == "Accept-Encoding");
    CHECK(out.content.to_string() == body);
  }
  SUBCASE("a body under the threshold") {
    auto out = exchange(request("gzip"), response(body.substr(0, 1000)));
    CHECK_FALSE(out.headers.contains(HeaderId::kContentEncoding));
    CHECK_FALSE(out.headers.contains("Vary"));
    HttpContentCompressor::Options options;
    options.min_body_bytes = 100;
    out = exchange(request("gzip"), response(body.substr(0, 1000)), options);
    CHECK(field_of(out.headers, "Content-Encoding") == "gzip");
  }
  SUBCASE("compressed content types") {
    for (std::string_view type : {"image/png", "video/mp4", "audio/ogg", "application/zip",
                                  "application/gzip", "application/zstd; x=1"}) {
      CAPTURE(type);
      auto out = exchange(request("gzip, br"), response(body, type));
      CHECK_FALSE(out.headers.contains(HeaderId::kContentEncoding));
      CHECK(out.content.to_string() == body);
    }
    auto svg = exchange(request("gzip"), response(body, "image/svg+xml"));
    CHECK(field_of(svg.headers, "Content-Encoding") == "gzip");
  }
  SUBCASE("a Content-Encoding already set") {
    auto resp = response(body);
    resp.headers.add(HeaderId::kContentEncoding, "identity");
    auto out = exchange(request("gzip"), std::move(resp));
    CHECK(field_of(out.headers, "Content-Encoding") == "identity");
    CHECK(out.content.to_string() == body);
  }
  SUBCASE("HEAD, 204 and 304") {
    auto out = exchange(request("gzip", HttpMethod::kHead), response(body));
    CHECK_FALSE(out.headers.contains(HeaderId::kContentEncoding));
    CHECK(field_of(out.headers, "Content-Length") == std::to_string(body.size()));
    for (std::uint16_t status : {204, 304}) {
      out = exchange(request("gzip"), response(body, "text/plain", status));
      CHECK_FALSE(out.headers.contains(HeaderId::kContentEncoding));
    }
  }
  SUBCASE("accepted codings only: q=0 refuses") {
    auto out = exchange(request("gzip;q=0, br;q=0"), response(body));
    CHECK_FALSE(out.headers.contains(HeaderId::kContentEncoding));
  }
  SUBCASE("incompressible bytes are sent as they are") {
    std::string noise(20'000, '\0');
    std::uint32_t x = 12345;
    for (auto& c : noise) {
      x = x * 1664525u + 1013904223u;
      c = static_cast<char>(x >> 24);
    }
    auto out = exchange(request("gzip"), response(noise, "text/plain"));
    CHECK_FALSE(out.headers.contains(HeaderId::kContentEncoding));
    CHECK(out.content.to_string() == noise);
  }
}

TEST_CASE("HttpContentCompressor merges Vary and weakens a strong ETag") {
  const std::string body = compression_test::json_body(5'000);
  auto resp = response(body);
  resp.headers.add("Vary", "Origin");
  resp.headers.add("ETag", "\"abc\"");
  auto out = exchange(request("br"), std::move(resp));
  CHECK(field_of(out.headers, "Vary") == "Origin, Accept-Encoding");
  CHECK(field_of(out.headers, "ETag") == "W/\"abc\"");
}

TEST_CASE("HttpContentCompressor pairs pipelined responses with their requests in order") {
  const std::string body = compression_test::json_body(5'000);
  auto compressor = std::make_shared<HttpContentCompressor>();
  EmbeddedChannel ch{compressor};
  const std::vector<std::optional<std::string_view>> accepts = {"br", std::nullopt, "gzip",
                                                                "zstd;q=0, deflate"};
  for (const auto& a : accepts) ch.write_inbound(request(a));
  CHECK(compressor->pending_requests() == 4);
  // An interim response answers no request.
  FullHttpResponse interim;
  interim.status.code = 100;
  ch.write_outbound(std::move(interim));
  REQUIRE(ch.read_outbound<FullHttpResponse>());
  const std::vector<std::string> expected = {"br", "<none>", "gzip", "deflate"};
  for (const auto& e : expected) {
    ch.write_outbound(response(body));
    auto out = ch.read_outbound<FullHttpResponse>();
    REQUIRE(out);
    CHECK(field_of(out->headers, "Content-Encoding") == e);
    CHECK(decode_as(e, out->content.to_string()) == body);
  }
  CHECK(compressor->pending_requests() == 0);
}

TEST_CASE("HttpContentCompressor compresses a streamed response; each flush emits a whole block") {
  for (std::string_view coding : {"gzip", "br", "zstd", "deflate"}) {
    CAPTURE(coding);
    EmbeddedChannel ch{std::make_shared<HttpContentCompressor>()};
    HttpRequest req;
    req.headers.add(HeaderId::kAcceptEncoding, coding);
    ch.write_inbound(std::move(req));
    HttpResponse head;
    head.headers.add(HeaderId::kContentType, "text/event-stream");
    ch.write_outbound(std::move(head));
    auto out_head = ch.read_outbound<HttpResponse>();
    REQUIRE(out_head);
    CHECK(field_of(out_head->headers, "Content-Encoding") == coding);
    CHECK(field_of(out_head->headers, "Transfer-Encoding") == "chunked");
    CHECK_FALSE(out_head->headers.contains(HeaderId::kContentLength));

    // The bytes so far, as a stream decoder would see them after each flush.
    std::string wire;
    auto drain = [&] {
      while (auto m = ch.read_outbound<Message>()) {
        REQUIRE(m->is<HttpContent>());
        wire += m->get<HttpContent>().content.to_string();
      }
    };
    std::string sent;
    for (int i = 0; i < 3; ++i) {
      const std::string event = "data: event " + std::to_string(i) + "\n\n";
      sent += event;
      ch.write_outbound(HttpContent{ByteBuf::from(event)});  // write and flush
      drain();
      // A decoder fed what was flushed so far yields everything sent so far.
      std::string got;
      auto decoder =
          coding == "br"
              ? std::shared_ptr<codec::CompressionDecoder>(std::make_shared<codec::BrotliDecoder>())
          : coding == "zstd"
              ? std::shared_ptr<codec::CompressionDecoder>(std::make_shared<codec::ZstdDecoder>())
              : std::make_shared<codec::ZlibDecoder>(coding == "gzip" ? codec::ZlibWrapper::kGzip
                                                                      : codec::ZlibWrapper::kZlib);
      EmbeddedChannel dec{decoder};
      dec.write_inbound(ByteBuf::from(wire));
      while (auto b = dec.read_inbound<ByteBuf>()) got += b->to_string();
      CHECK(got == sent);
    }
    ch.write_outbound(LastHttpContent{});
    auto last = ch.read_outbound<LastHttpContent>();
    REQUIRE(last);
    wire += last->content.to_string();
    CHECK(decode_as(coding, wire) == sent);
  }
}

TEST_CASE(
    "HttpContentCompressor does not compress a streamed response to HTTP/1.0 or a short one") {
  EmbeddedChannel ch{std::make_shared<HttpContentCompressor>()};
  ch.write_inbound(request("gzip"), request("gzip"));
  HttpResponse old;
  old.version = kHttp10;
  ch.write_outbound(std::move(old), LastHttpContent{});
  auto h = ch.read_outbound<HttpResponse>();
  REQUIRE(h);
  CHECK_FALSE(h->headers.contains(HeaderId::kContentEncoding));
  REQUIRE(ch.read_outbound<LastHttpContent>());
  HttpResponse small;
  small.headers.add(HeaderId::kContentLength, "10");
  ch.write_outbound(std::move(small), HttpContent{ByteBuf::from("0123456789")}, LastHttpContent{});
  h = ch.read_outbound<HttpResponse>();
  REQUIRE(h);
  CHECK_FALSE(h->headers.contains(HeaderId::kContentEncoding));
  CHECK(field_of(h->headers, "Content-Length") == "10");
  auto piece = ch.read_outbound<HttpContent>();
  REQUIRE(piece);
  CHECK(piece->content.to_string() == "0123456789");
}

TEST_CASE("HttpContentDecompressor decodes a full request body and fixes its headers") {
  const std::string body = compression_test::json_body(30'000);
  for (std::string_view coding : {"gzip", "x-gzip", "deflate", "br", "zstd"}) {
    CAPTURE(coding);
    // Compressed by the compressor, then decoded by the decompressor.
    auto compressed = exchange(request(coding == "x-gzip" ? "gzip" : coding), response(body));
    FullHttpRequest req = request(std::nullopt, HttpMethod::kPost);
    req.headers.add(HeaderId::kContentEncoding, coding);
    req.headers.add(HeaderId::kContentLength, std::to_string(compressed.content.readable_bytes()));
    req.content = std::move(compressed.content);
    EmbeddedChannel ch{std::make_shared<HttpContentDecompressor>()};
    ch.write_inbound(std::move(req));
    auto out = ch.read_inbound<FullHttpRequest>();
    REQUIRE(out);
    CHECK_FALSE(out->headers.contains(HeaderId::kContentEncoding));
    CHECK(field_of(out->headers, "Content-Length") == std::to_string(body.size()));
    CHECK(out->content.to_string() == body);
  }
}

TEST_CASE("HttpContentDecompressor decodes a streamed body in bounded pieces") {
  const std::string body = compression_test::json_body(200'000);
  const std::string compressed = [&] {
    auto r = exchange(request("gzip"), response(body));
    return r.content.to_string();
  }();
  DecompressionLimits limits;
  limits.chunk_size = 8192;
  EmbeddedChannel ch{std::make_shared<HttpContentDecompressor>(limits)};
  HttpResponse head;
  head.headers.add(HeaderId::kContentEncoding, "gzip");
  head.headers.add(HeaderId::kContentLength, std::to_string(compressed.size()));
  ch.write_inbound(std::move(head));
  auto out_head = ch.read_inbound<HttpResponse>();
  REQUIRE(out_head);
  CHECK_FALSE(out_head->headers.contains(HeaderId::kContentEncoding));
  CHECK_FALSE(out_head->headers.contains(HeaderId::kContentLength));
  CHECK(field_of(out_head->headers, "Transfer-Encoding") == "chunked");
  for (std::size_t at = 0; at < compressed.size(); at += 1000) {
    ch.write_inbound(HttpContent{ByteBuf::from(std::string_view(compressed).substr(at, 1000))});
  }
  ch.write_inbound(LastHttpContent{});
  std::string got;
  bool ended = false;
  while (auto m = ch.read_inbound<Message>()) {
    REQUIRE_FALSE(ended);
    if (m->is<HttpContent>()) {
      CHECK(m->get<HttpContent>().content.readable_bytes() <= 8192);
      got += m->get<HttpContent>().content.to_string();
    } else {
      REQUIRE(m->is<LastHttpContent>());
      ended = true;
    }
  }
  CHECK(ended);
  CHECK(got == body);
}

TEST_CASE("HttpContentDecompressor refuses a gzip bomb request with 413 within a few MiB") {
  const std::string bomb = compression_test::gzip_bomb(1);
  EmbeddedChannel ch{std::make_shared<HttpContentDecompressor>()};
  HttpRequest head;
  head.method = HttpMethod::kPost;
  head.headers.add(HeaderId::kContentEncoding, "gzip");
  ch.write_inbound(std::move(head));
  REQUIRE(ch.read_inbound<HttpRequest>());
  std::size_t out = 0;
  for (std::size_t at = 0; at < bomb.size(); at += 16384) {
    const auto piece = std::string_view(bomb).substr(at, 16384);
    if (at + 16384 >= bomb.size()) {
      ch.write_inbound(LastHttpContent{ByteBuf::from(piece), {}});
    } else {
      ch.write_inbound(HttpContent{ByteBuf::from(piece)});
    }
    while (auto m = ch.read_inbound<Message>()) {
      REQUIRE(m->is<HttpContent>());  // the rest of the body is dropped, its end too
      out += m->get<HttpContent>().content.readable_bytes();
    }
  }
  CHECK(out <= (4u << 20));
  // Refused (not raised): the server codec answers 413 in the request's turn.
  auto refusal = ch.read_outbound<HttpRefusal>();
  REQUIRE(refusal);
  CHECK(refusal->status == 413);
  CHECK_FALSE(ch.read_outbound<Message>());
  // The next message is decoded normally.
  ch.write_inbound(request(std::nullopt));
  CHECK(ch.read_inbound<FullHttpRequest>());
}

TEST_CASE("HttpContentDecompressor refuses a corrupt full request with 400, a bomb with 413") {
  EmbeddedChannel ch{std::make_shared<HttpContentDecompressor>()};
  FullHttpRequest corrupt;
  corrupt.method = HttpMethod::kPost;
  corrupt.headers.add(HeaderId::kContentEncoding, "gzip");
  corrupt.content = ByteBuf::from("definitely not gzip");
  ch.write_inbound(std::move(corrupt));
  CHECK_FALSE(ch.read_inbound<Message>());
  auto refusal = ch.read_outbound<HttpRefusal>();
  REQUIRE(refusal);
  CHECK(refusal->status == 400);
  FullHttpRequest bomb;
  bomb.method = HttpMethod::kPost;
  bomb.headers.add(HeaderId::kContentEncoding, "br");
  bomb.content = ByteBuf::from(compression_test::brotli_zeros(std::size_t{1} << 30));
  ch.write_inbound(std::move(bomb));
  CHECK_FALSE(ch.read_inbound<Message>());
  refusal = ch.read_outbound<HttpRefusal>();
  REQUIRE(refusal);
  CHECK(refusal->status == 413);
}

TEST_CASE("a server answers a request whose body does not decompress after the ones before it") {
  // codec, decompressor, aggregator and an application that answers /1 only when told to.
  HttpResponseEncoder::Options encoder;
  encoder.add_date_header = false;
  HttpRequestDecoderOptions decoder;
  decoder.full_bodiless_requests = true;
  struct App final : ChannelInboundHandler {
    void channel_read(ChannelHandlerContext& ctx, Message msg) override {
      context = &ctx;
      targets.push_back(msg.get<FullHttpRequest>().target);
    }
    ChannelHandlerContext* context = nullptr;
    std::vector<std::string> targets;
  };
  auto app = std::make_shared<App>();
  auto& targets = app->targets;
  EmbeddedChannel ch{std::make_shared<HttpServerCodec>(HttpParserLimits{}, encoder, decoder),
                     std::make_shared<HttpContentDecompressor>(),
                     std::make_shared<HttpObjectAggregator>(1 << 20), app};
  const std::string garbage = "definitely not gzip";
  ch.write_inbound(
      ByteBuf::from("GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
                    "POST /2 HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
                    "Content-Length: " +
                    std::to_string(garbage.size()) + "\r\n\r\n" + garbage));
  REQUIRE(targets.size() == 1);
  CHECK(testing::drain_outbound_bytes(ch).empty());  // the 400 waits for /1's answer
  FullHttpResponse ok;
  ok.content = ByteBuf::from("one");
  app->context->write_and_flush(Message(std::move(ok)));
  const std::string wire = testing::drain_outbound_bytes(ch);
  CHECK(wire.rfind("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none", 0) == 0);
  CHECK(wire.find("HTTP/1.1 400 Bad Request\r\n") != std::string::npos);
  CHECK(wire.find("HTTP/1.1 ", 1) == wire.find("HTTP/1.1 400 "));
  CHECK(targets.size() == 1);
  CHECK(ch.is_output_shutdown());
}

TEST_CASE("HttpContentDecompressor: a whole bomb in a full response, corrupt and unknown codings") {
  EmbeddedChannel ch{std::make_shared<HttpContentDecompressor>()};
  FullHttpResponse bomb;
  bomb.headers.add(HeaderId::kContentEncoding, "br");
  bomb.content = ByteBuf::from(compression_test::brotli_zeros(std::size_t{1} << 30));
  CHECK_THROWS_AS(ch.write_inbound(std::move(bomb)), DecompressionLimitError);
  FullHttpResponse corrupt;
  corrupt.headers.add(HeaderId::kContentEncoding, "gzip");
  corrupt.content = ByteBuf::from("definitely not gzip");
  CHECK_THROWS_AS(ch.write_inbound(std::move(corrupt)), codec::DecoderError);
  FullHttpResponse unknown;
  unknown.headers.add(HeaderId::kContentEncoding, "gzip, br");
  unknown.content = ByteBuf::from("opaque");
  ch.write_inbound(std::move(unknown));
  auto out = ch.read_inbound<FullHttpResponse>();
  REQUIRE(out);
  CHECK(field_of(out->headers, "Content-Encoding") == "gzip, br");
  CHECK(out->content.to_string() == "opaque");
}

TEST_CASE("HttpContentDecompressor leaves an empty full message (HEAD, 304) as it is") {
  EmbeddedChannel ch{std::make_shared<HttpContentDecompressor>()};
  FullHttpResponse head_answer;
  head_answer.headers.add(HeaderId::kContentEncoding, "gzip");
  head_answer.headers.add(HeaderId::kContentLength, "1234");
  ch.write_inbound(std::move(head_answer));
  auto out = ch.read_inbound<FullHttpResponse>();
  REQUIRE(out);
  CHECK(field_of(out->headers, "Content-Encoding") == "gzip");
  CHECK(field_of(out->headers, "Content-Length") == "1234");
}
