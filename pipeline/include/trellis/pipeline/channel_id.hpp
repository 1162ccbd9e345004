// ChannelId: the process-unique identity of a channel, with Netty's short (8 hex digits) and long
// text forms for logs.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace trellis {

/// The process-unique identity of a channel, with Netty's short and long text forms for logs.
/// A value type: copy and compare freely, from any thread.
class ChannelId {
 public:
  /// The id with the given value.
  explicit ChannelId(std::uint64_t value) noexcept : value_(value) {}
  /// A fresh id, unique within the process.
  static ChannelId next() noexcept;

  /// The numeric value.
  std::uint64_t value() const noexcept { return value_; }
  /// 8 hex digits, unique enough for logs.
  std::string as_short_text() const;
  /// Process id, sequence number and a per-process random part: unique across processes too.
  std::string as_long_text() const;

  /// Ids compare by value.
  friend auto operator<=>(const ChannelId&, const ChannelId&) = default;

 private:
  std::uint64_t value_;
};

}  // namespace trellis

/// Hashes a ChannelId by its value, for unordered containers.
template <>
struct std::hash<trellis::ChannelId> {
  /// The hash of `id.value()`.
  std::size_t operator()(const trellis::ChannelId& id) const noexcept {
    return std::hash<std::uint64_t>()(id.value());
  }
};
