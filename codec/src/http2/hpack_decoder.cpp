#include <trellis/codec/http2/hpack_decoder.hpp>

#include <string>

#include "hpack_huffman.hpp"
#include "hpack_integer.hpp"
#include "hpack_static_table.hpp"

namespace trellis::http2 {
namespace {

[[noreturn]] void fail(const char* what, std::size_t pos) {
  throw HpackDecodingError(std::string("HPACK: ") + what, static_cast<std::int64_t>(pos));
}

std::uint32_t read_integer(std::span<const std::byte> in, std::size_t& pos, int prefix_bits) {
  const std::size_t start = pos;
  std::uint32_t value = 0;
  switch (detail::decode_integer(in, pos, prefix_bits, value)) {
    case detail::IntegerError::kNone:
      return value;
    case detail::IntegerError::kTruncated:
      fail("truncated integer", start);
    case detail::IntegerError::kOverflow:
      break;
  }
  fail("integer overflow", start);
}

struct Field {
  std::string_view name;
  std::string_view value;
  bool from_dynamic_table = false;  // name points into the dynamic table
};

Field lookup(const HpackDynamicTable& table, std::uint32_t index, std::size_t pos) {
  if (index == 0) fail("index 0", pos);
  if (index <= detail::kStaticTableLength) {
    const auto& e = detail::kStaticTable[index - 1];
    return {e.name, e.value, false};
  }
  const std::size_t i = index - detail::kStaticTableLength - 1;
  if (i >= table.length()) fail("index beyond the tables", pos);
  return {table.name(i), table.value(i), true};
}

}  // namespace

HpackDecoder::HpackDecoder(std::uint32_t max_table_size, std::uint32_t max_header_list_size)
    : table_(max_table_size),
      max_table_size_(max_table_size),
      max_header_list_size_(max_header_list_size) {}

void HpackDecoder::set_max_table_size(std::uint32_t max_table_size) {
  max_table_size_ = max_table_size;
  if (max_table_size < table_.max_size()) size_update_required_ = true;
}

HpackDecoder::StringLiteral HpackDecoder::read_string(std::span<const std::byte> in,
                                                      std::size_t& pos) {
  if (pos >= in.size()) fail("truncated string", pos);
  const std::size_t start = pos;
  const bool huffman = (static_cast<std::uint8_t>(in[pos]) & 0x80) != 0;
  const std::uint32_t length = read_integer(in, pos, 7);
  if (length > in.size() - pos) fail("string longer than the block", start);
  const auto bytes = in.subspan(pos, length);
  pos += length;
  return {bytes, start, huffman};
}

std::string_view HpackDecoder::decode_string(const StringLiteral& s, std::string& scratch) {
  if (!s.huffman) return {reinterpret_cast<const char*>(s.bytes.data()), s.bytes.size()};
  switch (detail::huffman_decode(s.bytes, scratch)) {
    case detail::HuffmanError::kNone:
      return scratch;
    case detail::HuffmanError::kEos:
      fail("EOS in a Huffman string", s.position);
    case detail::HuffmanError::kPaddingTooLong:
      fail("Huffman padding longer than 7 bits", s.position);
    case detail::HuffmanError::kPaddingNotOnes:
      break;
  }
  fail("Huffman padding not the EOS prefix", s.position);
}

void HpackDecoder::decode(std::span<const std::byte> in, HpackHeaderSink sink) {
  std::size_t pos = 0;
  bool field_seen = false;
  std::uint64_t list_size = 0;
  std::int64_t too_large_at = -1;
  // Adds a field to the list's size; false once the list is over the limit.
  auto within_limit = [&](std::size_t field_start, std::string_view n, std::string_view v) {
    if (too_large_at >= 0) return false;
    list_size += HpackDynamicTable::kEntryOverhead + n.size() + v.size();
    if (list_size <= max_header_list_size_) return true;
    too_large_at = static_cast<std::int64_t>(field_start);
    return false;
  };
  while (pos < in.size()) {
    const std::size_t start = pos;
    const auto first = static_cast<std::uint8_t>(in[pos]);
    if ((first & 0xe0) == 0x20) {
      // Dynamic table size update (§6.3): only before the block's first field.
      if (field_seen) fail("table size update after a field", start);
      const std::uint32_t size = read_integer(in, pos, 5);
      if (size > max_table_size_) fail("table size update above the limit", start);
      table_.set_max_size(size);
      size_update_required_ = false;
      continue;
    }
    if (size_update_required_) fail("missing table size update after a lower limit", start);
    field_seen = true;
    if (first & 0x80) {
      // Indexed field (§6.1).
      const Field f = lookup(table_, read_integer(in, pos, 7), start);
      if (within_limit(start, f.name, f.value)) sink(f.name, f.value, false);
      continue;
    }
    const bool indexing = (first & 0x40) != 0;
    const bool never = !indexing && (first & 0x10) != 0;
    const std::uint32_t name_index = read_integer(in, pos, indexing ? 6 : 4);
    Field f;
    StringLiteral name_literal;
    if (name_index != 0) {
      f = lookup(table_, name_index, start);
    } else {
      name_literal = read_string(in, pos);
    }
    const StringLiteral value_literal = read_string(in, pos);
    if (!indexing) {
      // A field that does not go into the table is skipped undecoded once the list is over the
      // limit, or when its strings alone take it over.
      const std::uint64_t least = HpackDynamicTable::kEntryOverhead +
                                  (name_index != 0 ? f.name.size() : name_literal.least_length()) +
                                  value_literal.least_length();
      if (too_large_at < 0 && list_size + least > max_header_list_size_) {
        too_large_at = static_cast<std::int64_t>(start);
      }
      if (too_large_at >= 0) continue;
    }
    if (name_index == 0) f.name = decode_string(name_literal, name_scratch_);
    f.value = decode_string(value_literal, value_scratch_);
    if (within_limit(start, f.name, f.value)) sink(f.name, f.value, never);
    if (indexing) {
      if (f.from_dynamic_table) {
        // The entry the name comes from may be evicted to make room (§4.4).
        name_scratch_.assign(f.name);
        f.name = name_scratch_;
      }
      table_.add(f.name, f.value);
    }
  }
  if (size_update_required_) fail("missing table size update after a lower limit", pos);
  if (too_large_at >= 0) {
    throw HpackHeaderListTooLargeError(
        "HPACK: header list larger than " + std::to_string(max_header_list_size_) + " octets",
        too_large_at);
  }
}

void HpackDecoder::decode(std::span<const ByteBuf> fragments, HpackHeaderSink sink) {
  if (fragments.size() == 1) {
    decode(fragments.front().readable_span(), sink);
    return;
  }
  joined_.clear();
  for (const ByteBuf& f : fragments) {
    const auto bytes = f.readable_span();
    joined_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  decode(std::as_bytes(std::span<const char>(joined_.data(), joined_.size())), sink);
}

}  // namespace trellis::http2
