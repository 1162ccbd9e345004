// Http2Headers: a decoded or to-be-encoded HTTP/2 header list — (name, value, sensitive) fields
// in one reusable arena, pseudo-headers (":method", ...) kept ahead of regular fields. Clearing
// keeps the capacity, so a reused list adds fields without allocating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trellis::http2 {

/// An HTTP/2 header list. Fields keep their order, except that a pseudo-header is placed after
/// the pseudo-headers already present and before every regular field (RFC 9113 §8.3).
class Http2Headers {
 public:
  /// One field; the views are valid until the list changes.
  struct Field {
    std::string_view name;   ///< the field name (lower case on the wire)
    std::string_view value;  ///< the field value
    bool sensitive = false;  ///< sent or received as never indexed (RFC 7541 §6.2.3)
  };

  Http2Headers() = default;
  /// A list of `fields`, in order (pseudo-headers moved first).
  Http2Headers(std::initializer_list<Field> fields);

  /// Adds a field (a pseudo-header goes after the other pseudo-headers).
  void add(std::string_view name, std::string_view value, bool sensitive = false);
  /// Removes every field; the storage is kept for reuse.
  void clear() noexcept;

  /// How many fields the list has.
  std::size_t size() const noexcept { return entries_.size(); }
  /// True when the list has no field.
  bool empty() const noexcept { return entries_.empty(); }
  /// How many of the fields (the first ones) are pseudo-headers.
  std::size_t pseudo_header_count() const noexcept { return pseudo_count_; }
  /// Field `i` (i < size()).
  Field operator[](std::size_t i) const noexcept {
    const Entry& e = entries_[i];
    return {std::string_view(text_).substr(e.name_offset, e.name_length),
            std::string_view(text_).substr(e.value_offset, e.value_length), e.sensitive};
  }
  /// The value of the first field called `name`, if any.
  std::optional<std::string_view> get(std::string_view name) const noexcept;
  /// The list's size as SETTINGS_MAX_HEADER_LIST_SIZE counts it: 32 + name + value per field.
  std::size_t header_list_size() const noexcept;

  /// Same fields, values and sensitivity, in the same order.
  friend bool operator==(const Http2Headers& a, const Http2Headers& b) noexcept;

 private:
  struct Entry {
    std::uint32_t name_offset, name_length, value_offset, value_length;
    bool sensitive;
  };
  std::string text_;
  std::vector<Entry> entries_;
  std::size_t pseudo_count_ = 0;
};

}  // namespace trellis::http2
