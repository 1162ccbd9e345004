// The dynamic table of HPACK (RFC 7541 §2.3.2, §4): a FIFO of fields with size accounting and
// eviction, shared by HpackEncoder and HpackDecoder. Slots keep their strings' capacity when an
// entry is evicted, so a warm table adds entries without allocating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trellis::http2 {

/// The fields a peer indexed, newest first: entry 0 has HPACK index 62.
class HpackDynamicTable {
 public:
  /// The size of an entry beyond its name and value (RFC 7541 §4.1).
  static constexpr std::size_t kEntryOverhead = 32;

  /// An empty table that holds up to `max_size` octets.
  explicit HpackDynamicTable(std::size_t max_size = 4096) : max_size_(max_size) {}

  /// Entries in the table.
  std::size_t length() const noexcept { return count_; }
  /// The octets the entries take: the sum of 32 + name + value.
  std::size_t size() const noexcept { return size_; }
  /// The most octets the table holds.
  std::size_t max_size() const noexcept { return max_size_; }

  /// Changes the maximum size, evicting the oldest entries until the table fits.
  void set_max_size(std::size_t max_size);
  /// Adds a field as entry 0, first evicting the oldest entries to make room. A field larger than
  /// max_size() empties the table and is not added (§4.4). `name` and `value` may not point into
  /// the table.
  void add(std::string_view name, std::string_view value);
  /// Removes every entry.
  void clear() noexcept;

  /// Entry `i` (0 = newest); i < length().
  std::string_view name(std::size_t i) const noexcept { return slot(i).name; }
  /// The value of entry `i` (0 = newest); i < length().
  std::string_view value(std::size_t i) const noexcept { return slot(i).value; }

 private:
  struct Slot {
    std::string name;
    std::string value;
  };
  const Slot& slot(std::size_t i) const noexcept {
    return slots_[(newest_ + slots_.size() - i) % slots_.size()];
  }
  void evict_oldest() noexcept;
  void grow_slots();

  std::vector<Slot> slots_;  // a ring: newest_ is entry 0, the entries before it follow
  std::size_t newest_ = 0;
  std::size_t count_ = 0;
  std::size_t size_ = 0;
  std::size_t max_size_;
};

}  // namespace trellis::http2
