// libFuzzer target: arbitrary bytes as the body of a chunked request (chunk sizes, extensions,
// data, CRLFs, trailers), fed in input-chosen pieces. Only events or HttpParseError may come out.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <trellis/codec/http/http_parser.hpp>

using namespace trellis;
using namespace trellis::http;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t step = 1 + data[0] % 32;
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  HttpParserLimits limits;
  limits.max_chunk_size = 1 << 16;
  limits.max_chunk_extension_length = 64;
  HttpParser parser(HttpParser::Kind::kRequest, limits);
  ByteBuf cumulation =
      ByteBuf::from("POST /f HTTP/1.1\r\nHost: f\r\nTransfer-Encoding: chunked\r\n\r\n");
  std::uint64_t body = 0;
  try {
    for (std::size_t i = 0; i <= input.size(); i += step) {
      if (i < input.size()) cumulation.write_string(input.substr(i, step));
      for (int steps = 0;; ++steps) {
        if (steps > 1 << 20) __builtin_trap();
        auto e = parser.parse(cumulation);
        if (std::holds_alternative<std::monostate>(e)) break;
        if (auto* c = std::get_if<HttpContent>(&e)) body += c->content.readable_bytes();
      }
      cumulation.discard_read_bytes();
    }
  } catch (const HttpParseError&) {
  }
  if (body > input.size()) __builtin_trap();  // more body than input: framing is broken
  return 0;
}
