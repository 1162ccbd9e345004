// libFuzzer target: arbitrary bytes into the HTTP request parser twice, whole and a byte at a
// time, under limits taken from the input. The parser promises the same messages and the same
// first error however its input is split; whole heads take the one-pass walk, heads fed a byte
// at a time the scan and parse, so this also checks that the two agree. Any difference (in the
// heads' parts, the bodies, the trailers or the error status) is a bug, and traps.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <trellis/codec/http/http_parser.hpp>

using namespace trellis;
using namespace trellis::http;

namespace {

void append_fields(std::string& out, const HttpHeaders& headers) {
  for (std::size_t i = 0; i < headers.size(); ++i) {
    out += '|';
    out += std::to_string(static_cast<int>(headers.id_at(i)));
    out += headers[i].name;
    out += ':';
    out += headers[i].value;
  }
}

// Everything the parser reported, body pieces joined: "H..." heads, "B..." a body and its
// trailers, "E<status>" the error that ended it.
std::string run(std::string_view input, const HttpParserLimits& limits, std::size_t step) {
  HttpParser parser(HttpParser::Kind::kRequest, limits);
  ByteBuf in = ByteBuf::from("");
  std::string out, body;
  try {
    for (std::size_t i = 0; i < input.size(); i += step) {
      in.write_string(input.substr(i, step));
      for (int steps = 0;; ++steps) {
        if (steps > 1 << 20) __builtin_trap();  // no progress
        auto e = parser.parse(in);
        if (std::holds_alternative<std::monostate>(e)) break;
        if (auto* h = std::get_if<HttpRequest>(&e)) {
          out += "H" + std::string(h->method.name()) + " " + h->target + " " +
                 std::string(h->version.text());
          append_fields(out, h->headers);
        } else if (auto* c = std::get_if<HttpContent>(&e)) {
          body += c->content.to_string();
        } else if (auto* l = std::get_if<LastHttpContent>(&e)) {
          out += "B" + body + l->content.to_string();
          body.clear();
          append_fields(out, *l->trailers);
        }
      }
      in.discard_read_bytes();
    }
    parser.finish(in);
  } catch (const HttpParseError& e) {
    out += "E" + std::to_string(e.status());
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  HttpParserLimits limits;
  // Small limits half of the time, so that heads end near them.
  if ((data[0] & 1) != 0) {
    limits.max_initial_line_length = 1 + data[1] % 128;
    limits.max_header_size = data[2] * 4u;
    limits.max_header_count = data[0] >> 3;
  }
  const std::string_view input(reinterpret_cast<const char*>(data + 3), size - 3);
  if (input.empty()) return 0;
  if (run(input, limits, input.size()) != run(input, limits, 1)) __builtin_trap();
  return 0;
}
