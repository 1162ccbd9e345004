// HpackDecoder: decodes HTTP/2 header blocks (RFC 7541) into (name, value, sensitive) calls on a
// sink, with the dynamic table, table size updates, Huffman strings and a header list size limit.
// The sink gets views into the block or into the decoder's reused buffers: no allocation per
// field once the decoder is warm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include <trellis/codec/http2/hpack_dynamic_table.hpp>
#include <trellis/codec/http2/hpack_errors.hpp>
#include <trellis/pipeline/byte_buf.hpp>

namespace trellis::http2 {

/// Where HpackDecoder::decode() delivers each field: a non-owning reference to a callable
/// `void(std::string_view name, std::string_view value, bool sensitive)`. The views are valid
/// during the call only. `sensitive` is set for fields the peer sent as never indexed (§6.2.3):
/// an intermediary must forward them the same way.
class HpackHeaderSink {
 public:
  /// Refers to `f`, which must outlive the sink (a lambda passed straight to decode() does).
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, HpackHeaderSink> &&
           std::is_invocable_v<F&, std::string_view, std::string_view, bool>) HpackHeaderSink(F&& f)
  noexcept  // NOLINT(google-explicit-constructor)
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, std::string_view n, std::string_view v, bool s) {
          (*static_cast<std::remove_reference_t<F>*>(o))(n, v, s);
        }) {}

  /// Calls the callable.
  void operator()(std::string_view name, std::string_view value, bool sensitive) const {
    call_(object_, name, value, sensitive);
  }

 private:
  void* object_;
  void (*call_)(void*, std::string_view, std::string_view, bool);
};

/// Decodes the header blocks of one direction of an HTTP/2 connection. A block is decoded whole:
/// the codec joins a HEADERS frame's fragment with its CONTINUATION frames' first (their total
/// bounded by its own limit). Not thread-safe: one per connection and direction, on its loop.
class HpackDecoder {
 public:
  /// SETTINGS_HEADER_TABLE_SIZE's initial value (RFC 9113 §6.5.2).
  static constexpr std::uint32_t kDefaultMaxTableSize = 4096;
  /// The default limit on a header list's size (32 + name + value per field).
  static constexpr std::uint32_t kDefaultMaxHeaderListSize = 16384;

  /// A decoder whose dynamic table may grow to `max_table_size` octets (the
  /// SETTINGS_HEADER_TABLE_SIZE this endpoint advertised) and that refuses header lists larger
  /// than `max_header_list_size`. An HTTP/2 codec starts at the protocol's 4096 and calls
  /// set_max_table_size() once the peer has acknowledged the SETTINGS that change it.
  explicit HpackDecoder(std::uint32_t max_table_size = kDefaultMaxTableSize,
                        std::uint32_t max_header_list_size = kDefaultMaxHeaderListSize);

  /// Sets the limit on the dynamic table's size, as this endpoint's SETTINGS_HEADER_TABLE_SIZE
  /// changes. A size update in a block above it is an error. When the limit falls below the
  /// table's current maximum, the next block must start with a size update within it (§4.2).
  void set_max_table_size(std::uint32_t max_table_size);
  /// The limit on the dynamic table's size.
  std::uint32_t max_table_size() const noexcept { return max_table_size_; }
  /// Sets the limit on a header list's size (SETTINGS_MAX_HEADER_LIST_SIZE).
  void set_max_header_list_size(std::uint32_t max_header_list_size) noexcept {
    max_header_list_size_ = max_header_list_size;
  }
  /// The limit on a header list's size.
  std::uint32_t max_header_list_size() const noexcept { return max_header_list_size_; }

  /// Decodes one complete header block, calling `sink` for each field in order.
  ///
  /// Throws HpackDecodingError on invalid HPACK (the connection cannot go on). Throws
  /// HpackHeaderListTooLargeError when the fields add up to more than max_header_list_size(): the
  /// sink is not called again from the field that passes the limit on (found before its strings
  /// are decoded when they alone take the list over it), the rest of the block only updates the
  /// dynamic table (fields that are not indexed are skipped undecoded), and the error comes when
  /// the block is done (unless the rest of the block is invalid: then HpackDecodingError).
  /// An exception from the sink leaves the block half decoded: the table may no longer match the
  /// peer's, so the connection should end.
  void decode(std::span<const std::byte> block, HpackHeaderSink sink);
  /// decode() of the readable bytes of `block` (its indexes do not move).
  void decode(const ByteBuf& block, HpackHeaderSink sink) { decode(block.readable_span(), sink); }

  /// decode() of the block made of `fragments` (a HEADERS or PUSH_PROMISE frame's fragment, then
  /// its CONTINUATION frames'), in order; a representation may straddle two of them. More than
  /// one fragment are joined in a buffer the decoder keeps (no allocation once it is large
  /// enough); error positions are offsets in the joined block.
  void decode(std::span<const ByteBuf> fragments, HpackHeaderSink sink);

  /// The dynamic table, as the peer's encoder built it.
  const HpackDynamicTable& table() const noexcept { return table_; }

 private:
  // A string literal's bytes, not yet decoded.
  struct StringLiteral {
    std::span<const std::byte> bytes;
    std::size_t position = 0;  // of its length prefix in the block
    bool huffman = false;
    // The fewest octets it decodes to (a Huffman code has at most 30 bits per octet).
    std::size_t least_length() const noexcept {
      return !huffman ? bytes.size() : bytes.empty() ? 0 : (bytes.size() * 8 - 7) / 30;
    }
  };
  static StringLiteral read_string(std::span<const std::byte> in, std::size_t& pos);
  static std::string_view decode_string(const StringLiteral& s, std::string& scratch);

  HpackDynamicTable table_;
  std::uint32_t max_table_size_;
  std::uint32_t max_header_list_size_;
  bool size_update_required_ = false;
  std::string name_scratch_;
  std::string value_scratch_;
  std::string joined_;  // the fragments of a block, joined
};

}  // namespace trellis::http2
