// HPACK Huffman coding. Decoding peeks at the next 9 bits in a table that holds every code of 9
// bits or fewer (the characters of typical header fields); longer codes are found through the
// code's canonical layout (codes of one length are consecutive and ordered by symbol).
#include "hpack_huffman.hpp"

#include <array>
#include <cstdint>

#include "hpack_huffman_table.hpp"

namespace trellis::http2::detail {
namespace {

constexpr int kPeekBits = 9;
constexpr int kMaxBits = 30;
constexpr unsigned kEos = 256;

struct ShortCode {
  std::uint16_t symbol = 0;
  std::uint8_t bits = 0;  // 0: the code is longer than kPeekBits
};

struct DecodeTables {
  std::array<ShortCode, 1u << kPeekBits> short_codes{};
  std::array<std::uint32_t, kMaxBits + 1> first_code{};  // of each length
  std::array<std::uint32_t, kMaxBits + 1> count{};       // codes of each length
  std::array<std::uint16_t, kMaxBits + 1> offset{};      // of each length's first in `sorted`
  std::array<std::uint16_t, 257> sorted{};               // symbols by (length, symbol)
};

constexpr DecodeTables make_decode_tables() {
  DecodeTables t;
  for (unsigned s = 0; s < kHuffmanSymbols.size(); ++s) {
    const auto [code, bits] = kHuffmanSymbols[s];
    ++t.count[bits];
    if (bits <= kPeekBits) {
      const unsigned shift = kPeekBits - bits;
      for (unsigned fill = 0; fill < (1u << shift); ++fill) {
        t.short_codes[(code << shift) | fill] = {static_cast<std::uint16_t>(s),
                                                 static_cast<std::uint8_t>(bits)};
      }
    }
  }
  std::uint16_t next = 0;
  std::uint32_t code = 0;
  for (int bits = 1; bits <= kMaxBits; ++bits) {
    t.offset[bits] = next;
    t.first_code[bits] = code;
    for (unsigned s = 0; s < kHuffmanSymbols.size(); ++s) {
      if (kHuffmanSymbols[s].bits == bits) t.sorted[next++] = static_cast<std::uint16_t>(s);
    }
    code = (code + t.count[bits]) << 1;
  }
  return t;
}

constexpr DecodeTables kTables = make_decode_tables();

// The table must describe the canonical code that the RFC lists.
constexpr bool canonical() {
  for (int bits = 1; bits <= kMaxBits; ++bits) {
    for (std::uint32_t i = 0; i < kTables.count[bits]; ++i) {
      if (kHuffmanSymbols[kTables.sorted[kTables.offset[bits] + i]].code !=
          kTables.first_code[bits] + i) {
        return false;
      }
    }
  }
  return true;
}
static_assert(canonical(), "the HPACK Huffman code is canonical");

}  // namespace

std::size_t huffman_encoded_length(std::string_view text) noexcept {
  std::size_t bits = 0;
  for (unsigned char c : text) bits += kHuffmanSymbols[c].bits;
  return (bits + 7) / 8;
}

void huffman_encode(std::string_view text, std::size_t length, ByteBuf& out) {
  out.ensure_writable(length);
  auto* p = reinterpret_cast<std::uint8_t*>(out.writable_span().data());
  std::uint64_t acc = 0;
  int bits = 0;
  for (unsigned char c : text) {
    acc = (acc << kHuffmanSymbols[c].bits) | kHuffmanSymbols[c].code;
    bits += kHuffmanSymbols[c].bits;
    while (bits >= 8) {
      bits -= 8;
      *p++ = static_cast<std::uint8_t>(acc >> bits);
    }
  }
  if (bits > 0) *p++ = static_cast<std::uint8_t>((acc << (8 - bits)) | (0xffu >> bits));
  out.set_writer_index(out.writer_index() + length);
}

HuffmanError huffman_decode(std::span<const std::byte> in, std::string& out) {
  // Every code has at least 5 bits.
  out.resize(in.size() * 8 / 5);
  char* dst = out.data();
  std::uint64_t acc = 0;  // the next `bits` bits, aligned to the most significant bit
  int bits = 0;
  std::size_t i = 0;
  for (;;) {
    while (bits <= 56 && i < in.size()) {
      acc |= static_cast<std::uint64_t>(in[i++]) << (56 - bits);
      bits += 8;
    }
    if (bits == 0) break;
    // Past the input, peek as if it went on with ones: a valid padding then reads as a code
    // longer than what is left.
    const std::uint64_t window = bits < 64 ? acc | (~std::uint64_t{0} >> bits) : acc;
    unsigned symbol;
    int length;
    const ShortCode sc = kTables.short_codes[window >> (64 - kPeekBits)];
    if (sc.bits != 0) {
      symbol = sc.symbol;
      length = sc.bits;
    } else {
      length = kPeekBits + 1;
      for (;; ++length) {
        const auto code = static_cast<std::uint32_t>(window >> (64 - length));
        if (code - kTables.first_code[length] < kTables.count[length]) {
          symbol = kTables.sorted[kTables.offset[length] + (code - kTables.first_code[length])];
          break;
        }
      }
    }
    if (length > bits) {
      // Only padding is left (i == in.size(), since more than 56 bits are held otherwise).
      if (bits > 7) return HuffmanError::kPaddingTooLong;
      if (acc >> (64 - bits) != (1u << bits) - 1) return HuffmanError::kPaddingNotOnes;
      break;
    }
    if (symbol == kEos) return HuffmanError::kEos;
    *dst++ = static_cast<char>(symbol);
    acc <<= length;
    bits -= length;
  }
  out.resize(static_cast<std::size_t>(dst - out.data()));
  return HuffmanError::kNone;
}

}  // namespace trellis::http2::detail
