// libFuzzer target: arbitrary bytes as a sequence of HPACK header blocks (RFC 7541) for one
// decoder, split at input-chosen points, with input-chosen table and header list limits. Only
// fields or the two HPACK errors may come out; a decoded field list must re-encode and decode to
// the same fields; and the Huffman decoder must round-trip whatever it accepts.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <trellis/codec/http2/hpack_decoder.hpp>
#include <trellis/codec/http2/hpack_encoder.hpp>

#include "hpack_huffman.hpp"

using namespace trellis;
using namespace trellis::http2;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::uint32_t table_sizes[] = {0, 64, 256, 4096};
  const std::uint32_t list_sizes[] = {64, 1024, 16384};
  HpackDecoder decoder(table_sizes[data[0] % 4], list_sizes[(data[0] >> 2) % 3]);
  const std::size_t step = 1 + data[1];
  const auto input = std::as_bytes(std::span<const std::uint8_t>(data + 2, size - 2));

  struct Field {
    std::string name, value;
    bool sensitive;
  };
  std::vector<Field> fields;
  for (std::size_t i = 0; i < input.size(); i += step) {
    const auto block = input.subspan(i, std::min(step, input.size() - i));
    fields.clear();
    std::uint64_t list_size = 0;
    try {
      decoder.decode(block, [&](std::string_view n, std::string_view v, bool s) {
        list_size += 32 + n.size() + v.size();
        fields.push_back({std::string(n), std::string(v), s});
      });
    } catch (const HpackHeaderListTooLargeError&) {
      // The sink saw no more than the limit.
      if (list_size > decoder.max_header_list_size()) __builtin_trap();
      continue;
    } catch (const HpackDecodingError&) {
      return 0;  // the connection would end here
    }
    if (list_size > decoder.max_header_list_size()) __builtin_trap();
    if (decoder.table().size() > decoder.table().max_size()) __builtin_trap();

    // Whatever decodes re-encodes to the same fields.
    HpackEncoder encoder;
    HpackDecoder again(4096, 1u << 30);
    std::vector<HpackHeader> headers;
    for (const auto& f : fields) headers.push_back({f.name, f.value, f.sensitive});
    ByteBuf out = ByteBuf::from("");
    encoder.encode(headers, out);
    std::size_t k = 0;
    again.decode(out, [&](std::string_view n, std::string_view v, bool s) {
      if (k >= fields.size() || fields[k].name != n || fields[k].value != v ||
          (fields[k].sensitive && !s)) {
        __builtin_trap();
      }
      ++k;
    });
    if (k != fields.size()) __builtin_trap();
  }

  // The Huffman decoder alone: what it accepts encodes back to the same length or shorter
  // (padding aside, the code is unique).
  std::string text;
  if (http2::detail::huffman_decode(input, text) == http2::detail::HuffmanError::kNone) {
    ByteBuf coded = ByteBuf::from("");
    http2::detail::huffman_encode(text, coded);
    std::string back;
    if (http2::detail::huffman_decode(coded.readable_span(), back) !=
            http2::detail::HuffmanError::kNone ||
        back != text || coded.readable_bytes() != input.size()) {
      __builtin_trap();
    }
  }
  return 0;
}
