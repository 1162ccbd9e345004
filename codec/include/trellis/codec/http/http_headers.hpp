// HttpHeaders: an ordered multi-map of header fields with case-insensitive names. Names and
// values live in one character arena and well-known names are interned, so a decoded header
// block costs two allocations (arena and index) however many fields it has.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trellis::http {

// Well-known field names, interned: lookups by these compare an id, not characters.
enum class HeaderId : std::uint8_t {
  kOther = 0,
  kHost,
  kContentLength,
  kContentType,
  kTransferEncoding,
  kConnection,
  kKeepAlive,
  kExpect,
  kDate,
  kServer,
  kUserAgent,
  kAccept,
  kAcceptEncoding,
  kAcceptLanguage,
  kCookie,
  kSetCookie,
  kTrailer,
  kUpgrade,
  kTe,
  kCacheControl,
  kReferer,
  kOrigin,
  kAuthorization,
  kContentEncoding,
  kCount
};

// The canonical spelling of a well-known name ("" for kOther).
std::string_view header_name(HeaderId id) noexcept;
// The id of name (case-insensitive), kOther when it is not well known.
HeaderId header_id(std::string_view name) noexcept;
bool iequals(std::string_view a, std::string_view b) noexcept;

namespace header {
inline constexpr std::string_view kHost = "Host";
inline constexpr std::string_view kContentLength = "Content-Length";
inline constexpr std::string_view kContentType = "Content-Type";
inline constexpr std::string_view kTransferEncoding = "Transfer-Encoding";
inline constexpr std::string_view kConnection = "Connection";
inline constexpr std::string_view kKeepAlive = "Keep-Alive";
inline constexpr std::string_view kExpect = "Expect";
inline constexpr std::string_view kDate = "Date";
inline constexpr std::string_view kServer = "Server";
inline constexpr std::string_view kTrailer = "Trailer";
}  // namespace header

class HttpHeaders {
 public:
  struct Field {
    std::string_view name;
    std::string_view value;
  };

  HttpHeaders() = default;
  HttpHeaders(const HttpHeaders& other) { *this = other; }
  HttpHeaders& operator=(const HttpHeaders& other);
  HttpHeaders(HttpHeaders&&) noexcept = default;
  HttpHeaders& operator=(HttpHeaders&&) noexcept = default;

  // Appends a field (multi-values keep their order).
  void add(std::string_view name, std::string_view value);
  void add(HeaderId id, std::string_view value);
  // Replaces every field of that name with one.
  void set(std::string_view name, std::string_view value);
  // Removes every field of that name; returns how many.
  std::size_t remove(std::string_view name);
  void clear() noexcept;

  // The first value of name.
  std::optional<std::string_view> get(std::string_view name) const noexcept;
  std::optional<std::string_view> get(HeaderId id) const noexcept;
  std::vector<std::string_view> get_all(std::string_view name) const;
  bool contains(std::string_view name) const noexcept { return get(name).has_value(); }
  bool contains(HeaderId id) const noexcept { return get(id).has_value(); }
  // True when a comma-separated value list of name holds token (case-insensitive), as for
  // "Connection: keep-alive, Upgrade".
  bool contains_token(HeaderId id, std::string_view token) const noexcept;
  std::size_t count(HeaderId id) const noexcept;

  std::size_t size() const noexcept { return entries_.size(); }
  bool empty() const noexcept { return entries_.empty(); }
  Field operator[](std::size_t i) const noexcept { return field(entries_[i]); }
  HeaderId id_at(std::size_t i) const noexcept { return entries_[i].id; }

  class Iterator {
   public:
    Iterator(const HttpHeaders* h, std::size_t i) noexcept : h_(h), i_(i) {}
    Field operator*() const noexcept { return (*h_)[i_]; }
    Iterator& operator++() noexcept {
      ++i_;
      return *this;
    }
    bool operator==(const Iterator& o) const noexcept { return i_ == o.i_; }

   private:
    const HttpHeaders* h_;
    std::size_t i_;
  };
  Iterator begin() const noexcept { return {this, 0}; }
  Iterator end() const noexcept { return {this, entries_.size()}; }

  // Reserves room for a header block of about bytes characters and fields fields.
  void reserve(std::size_t bytes, std::size_t fields);

 private:
  struct Entry {
    std::uint32_t name_offset;  // into arena_, unless id != kOther
    std::uint32_t value_offset;
    std::uint16_t name_length;
    std::uint32_t value_length;
    HeaderId id;
  };
  Field field(const Entry& e) const noexcept;
  std::uint32_t append(std::string_view text);

  std::string arena_;
  std::vector<Entry> entries_;
};

}  // namespace trellis::http
