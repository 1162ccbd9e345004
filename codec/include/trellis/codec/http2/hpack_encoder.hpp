// HpackEncoder: encodes header lists into HTTP/2 header blocks (RFC 7541) in a ByteBuf, with
// static and dynamic table matches, an indexing policy, Huffman strings when not longer, and the
// table size updates a peer's SETTINGS_HEADER_TABLE_SIZE calls for. No allocation per field once
// the dynamic table is warm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <trellis/codec/http2/hpack_dynamic_table.hpp>
#include <trellis/pipeline/byte_buf.hpp>

namespace trellis::http2 {

/// One field to encode. Names are lower case (HTTP/2 requires it; the encoder does not check).
struct HpackHeader {
  std::string_view name;   ///< the field name
  std::string_view value;  ///< the field value
  /// Sent as never indexed (§6.2.3): kept out of both tables here and at every intermediary.
  bool sensitive = false;
};

/// Which fields the encoder adds to the dynamic table.
enum class HpackIndexing {
  /// Like nghttp2: every field except those whose values seldom repeat (:path, age,
  /// content-length, etag, if-modified-since, if-none-match, location, set-cookie) and those
  /// larger than 3/4 of the table. authorization, proxy-authorization and cookies shorter than
  /// 20 octets are sent as never indexed.
  kDefault,
  /// Every field that fits the table, except sensitive ones (the choices of RFC 7541
  /// Appendix C).
  kAll,
};

/// When the encoder Huffman-codes a string.
enum class HpackHuffman {
  kWhenNotLonger,  ///< when the code is not longer than the string (the choice of RFC 7541 C.4,
                   ///< C.6)
  kNever,          ///< never (RFC 7541 C.3 and C.5)
};

/// HpackEncoder's settings.
struct HpackEncoderOptions {
  /// The most octets the encoder's dynamic table takes, whatever the peer allows (nghttp2: 4096).
  std::uint32_t max_table_size = 4096;
  /// Which fields are added to the dynamic table.
  HpackIndexing indexing = HpackIndexing::kDefault;
  /// When strings are Huffman-coded.
  HpackHuffman huffman = HpackHuffman::kWhenNotLonger;
};

/// Encodes the header blocks of one direction of an HTTP/2 connection. Not thread-safe: one per
/// connection and direction, on its loop.
class HpackEncoder {
 public:
  /// SETTINGS_HEADER_TABLE_SIZE's initial value (RFC 9113 §6.5.2).
  static constexpr std::uint32_t kDefaultPeerMaxTableSize = 4096;

  /// An encoder whose peer's decoder starts with a 4096-octet table.
  explicit HpackEncoder(HpackEncoderOptions options = {});

  /// The peer's SETTINGS_HEADER_TABLE_SIZE changed: the next block starts with the size updates
  /// that bring the table to min(this, options.max_table_size) (with the smallest size seen since
  /// the last block first, when it is lower, §4.2).
  void set_peer_max_table_size(std::uint32_t size);

  /// Encodes a whole header list as one block, appended to `out`.
  void encode(std::span<const HpackHeader> headers, ByteBuf& out);

  /// Starts a block: appends the pending table size updates. Then call encode_field() per field.
  void begin_block(ByteBuf& out);
  /// Appends one field of the block begun by begin_block().
  void encode_field(std::string_view name, std::string_view value, bool sensitive, ByteBuf& out);

  /// The dynamic table as the peer's decoder will have it after the blocks encoded so far.
  const HpackDynamicTable& table() const noexcept { return table_; }

 private:
  void encode_string(std::string_view s, ByteBuf& out);
  void write_literal(std::uint8_t flags, int prefix_bits, std::uint32_t name_index,
                     std::string_view name, std::string_view value, ByteBuf& out);

  HpackEncoderOptions options_;
  HpackDynamicTable table_;
  bool update_pending_ = false;
  std::uint32_t smallest_pending_ = 0;  // the smallest size since the last block
  std::uint32_t target_size_ = 0;       // the size the table will have
};

}  // namespace trellis::http2
