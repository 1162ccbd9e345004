// HPACK's Huffman coding (RFC 7541 §5.2, Appendix B): encoded length, encoding into a ByteBuf and
// decoding with the padding and EOS checks of §5.2.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include <trellis/pipeline/byte_buf.hpp>

namespace trellis::http2::detail {

// Bytes that huffman_encode(text) writes.
std::size_t huffman_encoded_length(std::string_view text) noexcept;

// Appends the Huffman code of `text`, padded with the most significant bits of EOS. `length` is
// huffman_encoded_length(text), when the caller has it.
void huffman_encode(std::string_view text, std::size_t length, ByteBuf& out);
inline void huffman_encode(std::string_view text, ByteBuf& out) {
  huffman_encode(text, huffman_encoded_length(text), out);
}

// Why huffman_decode() refused its input.
enum class HuffmanError { kNone, kEos, kPaddingTooLong, kPaddingNotOnes };

// Decodes `in` into `out` (replacing its content; its capacity is reused).
HuffmanError huffman_decode(std::span<const std::byte> in, std::string& out);

}  // namespace trellis::http2::detail
