// libFuzzer target: arbitrary bytes into the HTTP request parser, fed in pieces whose sizes come
// from the input itself (and, as the decoder's full_bodiless_requests does, parsing heads in
// place with parse_request_head and ending bodiless requests with skip_empty_body when the
// input's first byte says so). Anything but events or HttpParseError (a crash, a hang, another
// exception, a sanitizer report) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <trellis/codec/http/http_parser.hpp>

using namespace trellis;
using namespace trellis::http;

namespace {
void drain(HttpParser& parser, ByteBuf& in, bool skip_empty_bodies) {
  // Every event consumes input or changes state: a bounded number of steps per byte.
  for (int steps = 0; steps < 1 << 20; ++steps) {
    if (skip_empty_bodies && !parser.in_message()) {
      // As the decoder does with the option: heads parsed in place, bodiless ones ended at once.
      FullHttpRequest full;
      if (!parser.parse_request_head(in, [&] {
            return HttpParser::RequestHeadParts{full.method, full.target, full.version,
                                                full.headers};
          })) {
        return;
      }
      if (parser.at_empty_body()) {
        parser.skip_empty_body();
        if (parser.in_message()) __builtin_trap();  // the message must be over
      }
      continue;
    }
    auto e = parser.parse(in);
    if (std::holds_alternative<std::monostate>(e)) return;
  }
  __builtin_trap();  // the parser looped without consuming input
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t step = 1 + data[0] % 64;
  const bool skip_empty_bodies = (data[0] & 0x80) != 0;
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  HttpParserLimits limits;
  limits.max_header_size = 2048;
  limits.max_initial_line_length = 512;
  HttpParser parser(HttpParser::Kind::kRequest, limits);
  ByteBuf cumulation = ByteBuf::from("");
  try {
    for (std::size_t i = 0; i < input.size(); i += step) {
      cumulation.write_string(input.substr(i, step));
      drain(parser, cumulation, skip_empty_bodies);
      cumulation.discard_read_bytes();
    }
    parser.finish(cumulation);
  } catch (const HttpParseError&) {
  }
  return 0;
}
