// HPACK's integer representation (RFC 7541 §5.1): a value in an N-bit prefix, continued in 7-bit
// groups. Decoding refuses values above 2^32 - 1 and more continuation bytes than such a value
// needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include <trellis/pipeline/byte_buf.hpp>

namespace trellis::http2::detail {

// Appends `value` with an N-bit prefix (1 <= prefix_bits <= 8); `flags` are the bits of the first
// byte above the prefix.
inline void encode_integer(std::uint8_t flags, int prefix_bits, std::uint32_t value, ByteBuf& out) {
  const std::uint32_t max_prefix = (1u << prefix_bits) - 1;
  if (value < max_prefix) {
    out.write_u8(static_cast<std::uint8_t>(flags | value));
    return;
  }
  out.write_u8(static_cast<std::uint8_t>(flags | max_prefix));
  value -= max_prefix;
  while (value >= 0x80) {
    out.write_u8(static_cast<std::uint8_t>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.write_u8(static_cast<std::uint8_t>(value));
}

// Why decode_integer() failed.
enum class IntegerError { kNone, kTruncated, kOverflow };

// Decodes the integer at in[pos] with an N-bit prefix; advances `pos` past it.
inline IntegerError decode_integer(std::span<const std::byte> in, std::size_t& pos, int prefix_bits,
                                   std::uint32_t& value) {
  if (pos >= in.size()) return IntegerError::kTruncated;
  const std::uint32_t max_prefix = (1u << prefix_bits) - 1;
  std::uint64_t v = static_cast<std::uint8_t>(in[pos++]) & max_prefix;
  if (v < max_prefix) {
    value = static_cast<std::uint32_t>(v);
    return IntegerError::kNone;
  }
  for (int shift = 0;; shift += 7) {
    // 2^32 - 1 needs at most 5 continuation bytes (shifts 0 to 28).
    if (shift > 28) return IntegerError::kOverflow;
    if (pos >= in.size()) return IntegerError::kTruncated;
    const auto b = static_cast<std::uint8_t>(in[pos++]);
    v += static_cast<std::uint64_t>(b & 0x7f) << shift;
    if (v > 0xffffffffu) return IntegerError::kOverflow;
    if ((b & 0x80) == 0) break;
  }
  value = static_cast<std::uint32_t>(v);
  return IntegerError::kNone;
}

}  // namespace trellis::http2::detail
