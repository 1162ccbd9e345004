#include <trellis/codec/http2/hpack_encoder.hpp>

#include <algorithm>
#include <array>
#include <cstring>

#include "hpack_huffman.hpp"
#include "hpack_integer.hpp"
#include "hpack_static_table.hpp"

namespace trellis::http2 {
namespace {

// The static table's indexes grouped by name length (in table order within a length), so that a
// look-up compares only names of the right length.
constexpr std::size_t kMaxStaticNameLength = 27;  // access-control-allow-origin

struct StaticByLength {
  std::array<std::uint8_t, detail::kStaticTableLength> indexes{};
  std::array<std::uint8_t, kMaxStaticNameLength + 2> begin{};  // of each length in `indexes`
};

constexpr StaticByLength make_static_by_length() {
  StaticByLength t;
  std::size_t next = 0;
  for (std::size_t length = 0; length <= kMaxStaticNameLength; ++length) {
    t.begin[length] = static_cast<std::uint8_t>(next);
    for (std::size_t i = 0; i < detail::kStaticTableLength; ++i) {
      if (detail::kStaticTable[i].name.size() == length) {
        t.indexes[next++] = static_cast<std::uint8_t>(i + 1);
      }
    }
  }
  t.begin[kMaxStaticNameLength + 1] = static_cast<std::uint8_t>(next);
  return t;
}

constexpr StaticByLength kStaticByLength = make_static_by_length();
static_assert(kStaticByLength.begin[kMaxStaticNameLength + 1] == detail::kStaticTableLength);

// The static table's index of an exact match and of the name's first entry (0: none).
struct StaticMatch {
  std::uint32_t full = 0;
  std::uint32_t name = 0;
};

StaticMatch find_static(std::string_view name, std::string_view value) {
  StaticMatch m;
  if (name.size() > kMaxStaticNameLength) return m;
  for (std::size_t k = kStaticByLength.begin[name.size()];
       k < kStaticByLength.begin[name.size() + 1]; ++k) {
    const std::uint32_t index = kStaticByLength.indexes[k];
    const auto& e = detail::kStaticTable[index - 1];
    if (std::memcmp(e.name.data(), name.data(), name.size()) != 0) {
      if (m.name != 0) break;  // a name's entries are adjacent
      continue;
    }
    if (m.name == 0) m.name = index;
    if (e.value == value) {
      m.full = index;
      break;
    }
  }
  return m;
}

bool seldom_repeats(std::string_view name) {
  switch (name.size()) {
    case 3:
      return name == "age";
    case 4:
      return name == "etag";
    case 5:
      return name == ":path";
    case 8:
      return name == "location";
    case 10:
      return name == "set-cookie";
    case 13:
      return name == "if-none-match";
    case 14:
      return name == "content-length";
    case 17:
      return name == "if-modified-since";
    default:
      return false;
  }
}

bool never_indexed_by_default(std::string_view name, std::string_view value) {
  return name == "authorization" || name == "proxy-authorization" ||
         (name == "cookie" && value.size() < 20);
}

}  // namespace

HpackEncoder::HpackEncoder(HpackEncoderOptions options)
    : options_(options),
      table_(kDefaultPeerMaxTableSize),
      target_size_(std::min(kDefaultPeerMaxTableSize, options.max_table_size)) {
  // The peer's decoder starts at 4096: a smaller table of ours must be announced.
  if (target_size_ != kDefaultPeerMaxTableSize) {
    update_pending_ = true;
    smallest_pending_ = target_size_;
  }
}

void HpackEncoder::set_peer_max_table_size(std::uint32_t size) {
  const std::uint32_t target = std::min(size, options_.max_table_size);
  smallest_pending_ = update_pending_ ? std::min(smallest_pending_, target) : target;
  target_size_ = target;
  update_pending_ = true;
}

void HpackEncoder::begin_block(ByteBuf& out) {
  if (!update_pending_) return;
  update_pending_ = false;
  if (smallest_pending_ < target_size_) {
    detail::encode_integer(0x20, 5, smallest_pending_, out);
    table_.set_max_size(smallest_pending_);
  }
  if (smallest_pending_ < target_size_ || target_size_ != table_.max_size()) {
    detail::encode_integer(0x20, 5, target_size_, out);
    table_.set_max_size(target_size_);
  }
}

void HpackEncoder::encode(std::span<const HpackHeader> headers, ByteBuf& out) {
  begin_block(out);
  for (const auto& h : headers) encode_field(h.name, h.value, h.sensitive, out);
}

void HpackEncoder::encode_string(std::string_view s, ByteBuf& out) {
  if (options_.huffman == HpackHuffman::kWhenNotLonger) {
    const std::size_t coded = detail::huffman_encoded_length(s);
    if (coded <= s.size()) {
      detail::encode_integer(0x80, 7, static_cast<std::uint32_t>(coded), out);
      detail::huffman_encode(s, coded, out);
      return;
    }
  }
  detail::encode_integer(0, 7, static_cast<std::uint32_t>(s.size()), out);
  out.write_string(s);
}

void HpackEncoder::write_literal(std::uint8_t flags, int prefix_bits, std::uint32_t name_index,
                                 std::string_view name, std::string_view value, ByteBuf& out) {
  detail::encode_integer(flags, prefix_bits, name_index, out);
  if (name_index == 0) encode_string(name, out);
  encode_string(value, out);
}

void HpackEncoder::encode_field(std::string_view name, std::string_view value, bool sensitive,
                                ByteBuf& out) {
  const bool never = sensitive || (options_.indexing == HpackIndexing::kDefault &&
                                   never_indexed_by_default(name, value));
  const StaticMatch s = find_static(name, value);
  std::uint32_t name_index = s.name;
  if (!never) {
    if (s.full != 0) {
      detail::encode_integer(0x80, 7, s.full, out);
      return;
    }
    for (std::size_t i = 0; i < table_.length(); ++i) {
      const std::string_view n = table_.name(i);
      if (n.size() != name.size() || n != name) continue;
      const auto index = static_cast<std::uint32_t>(detail::kStaticTableLength + 1 + i);
      if (table_.value(i) == value) {
        detail::encode_integer(0x80, 7, index, out);
        return;
      }
      if (name_index == 0) name_index = index;
    }
  } else if (name_index == 0) {
    for (std::size_t i = 0; i < table_.length(); ++i) {
      if (table_.name(i) == name) {
        name_index = static_cast<std::uint32_t>(detail::kStaticTableLength + 1 + i);
        break;
      }
    }
  }
  if (never) {
    write_literal(0x10, 4, name_index, name, value, out);
    return;
  }
  const std::size_t entry = HpackDynamicTable::kEntryOverhead + name.size() + value.size();
  const bool index = options_.indexing == HpackIndexing::kAll
                         ? entry <= table_.max_size()
                         : !seldom_repeats(name) && entry <= table_.max_size() / 4 * 3;
  if (index) {
    write_literal(0x40, 6, name_index, name, value, out);
    table_.add(name, value);
  } else {
    write_literal(0x00, 4, name_index, name, value, out);
  }
}

}  // namespace trellis::http2
