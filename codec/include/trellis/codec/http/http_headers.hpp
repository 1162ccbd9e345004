// HttpHeaders: an ordered multi-map of header fields with case-insensitive names. The field index
// and the characters of names and values share one block, and well-known names are interned. A
// small block (a few fields) is kept in the object itself; a larger one is one pooled ByteBuf, so
// a decoded header block costs at most one pool allocation however many fields it has.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <trellis/pipeline/byte_buf.hpp>

namespace trellis::http {

/// Well-known field names, interned: lookups by these compare an id, not characters.
enum class HeaderId : std::uint8_t {
  kOther = 0,         ///< A name that is not well known (compared by its characters).
  kHost,              ///< Host
  kContentLength,     ///< Content-Length
  kContentType,       ///< Content-Type
  kTransferEncoding,  ///< Transfer-Encoding
  kConnection,        ///< Connection
  kKeepAlive,         ///< Keep-Alive
  kExpect,            ///< Expect
  kDate,              ///< Date
  kServer,            ///< Server
  kUserAgent,         ///< User-Agent
  kAccept,            ///< Accept
  kAcceptEncoding,    ///< Accept-Encoding
  kAcceptLanguage,    ///< Accept-Language
  kCookie,            ///< Cookie
  kSetCookie,         ///< Set-Cookie
  kTrailer,           ///< Trailer
  kUpgrade,           ///< Upgrade
  kTe,                ///< TE
  kCacheControl,      ///< Cache-Control
  kReferer,           ///< Referer
  kOrigin,            ///< Origin
  kAuthorization,     ///< Authorization
  kContentEncoding,   ///< Content-Encoding
  kCount              ///< The number of ids (not a name).
};
static_assert(static_cast<unsigned>(HeaderId::kCount) <= 32, "HttpHeaders keeps one bit per id");

namespace detail {
inline constexpr std::array<std::string_view, static_cast<std::size_t>(HeaderId::kCount)>
    kHeaderNames = {
        "",
        "Host",
        "Content-Length",
        "Content-Type",
        "Transfer-Encoding",
        "Connection",
        "Keep-Alive",
        "Expect",
        "Date",
        "Server",
        "User-Agent",
        "Accept",
        "Accept-Encoding",
        "Accept-Language",
        "Cookie",
        "Set-Cookie",
        "Trailer",
        "Upgrade",
        "TE",
        "Cache-Control",
        "Referer",
        "Origin",
        "Authorization",
        "Content-Encoding",
};

// The longest canonical spelling.
inline constexpr std::size_t kMaxHeaderNameLength = [] {
  std::size_t n = 0;
  for (auto name : kHeaderNames) n = name.size() > n ? name.size() : n;
  return n;
}();
}  // namespace detail

/// The canonical spelling of a well-known name ("" for kOther).
inline std::string_view header_name(HeaderId id) noexcept {
  return detail::kHeaderNames[static_cast<std::size_t>(id)];
}
/// The id of name (case-insensitive), kOther when it is not well known.
HeaderId header_id(std::string_view name) noexcept;
/// True when a and b are equal ignoring ASCII case.
bool iequals(std::string_view a, std::string_view b) noexcept;

/// Names of common fields, for the string overloads of HttpHeaders.
namespace header {
/// @name Field names
///@{

/// The field's canonical spelling.
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
///@}
}  // namespace header

/// The header (or trailer) fields of an HTTP message: an ordered multi-map with case-insensitive
/// names, well-known names interned (see HeaderId). Fields are kept in the order they were added;
/// names and values are viewed as `std::string_view`s into the object, valid until it changes.
/// Not thread-safe: one thread at a time.
class HttpHeaders {
 public:
  /// One field: views into the HttpHeaders, valid until it changes.
  struct Field {
    std::string_view name;   ///< The name, as added (canonical spelling for well-known names).
    std::string_view value;  ///< The value.
  };

  /// No fields (nothing allocated).
  HttpHeaders() noexcept {}  // user-provided: a const HttpHeaders may be default-initialised
  /// @name Copying and moving
  ///@{

  /// A copy copies the fields; a move leaves the source empty.
  HttpHeaders(const HttpHeaders& other) { *this = other; }
  HttpHeaders& operator=(const HttpHeaders& other);
  HttpHeaders(HttpHeaders&& other) noexcept { take(other); }
  HttpHeaders& operator=(HttpHeaders&& other) noexcept {
    if (this != &other) take(other);
    return *this;
  }
  ///@}

  /// @name Adding and removing
  ///@{

  /// Appends a field (multi-values keep their order).
  void add(std::string_view name, std::string_view value);
  /// Appends a field with a well-known name.
  void add(HeaderId id, std::string_view value);
  /// Replaces every field of that name with one.
  void set(std::string_view name, std::string_view value);
  /// Removes every field of that name; returns how many.
  std::size_t remove(std::string_view name);
  /// Removes every field.
  void clear() noexcept;
  ///@}

  /// @name Looking up
  ///@{

  /// The first value of name (nullopt when there is none).
  std::optional<std::string_view> get(std::string_view name) const noexcept;
  /// The first value of a well-known name (answers at once when it is absent).
  std::optional<std::string_view> get(HeaderId id) const noexcept {
    if (id != HeaderId::kOther && (present_ & bit(id)) == 0) return std::nullopt;
    return find(id);
  }
  /// Every value of name, in order.
  std::vector<std::string_view> get_all(std::string_view name) const;
  /// True when a field of that name is present.
  bool contains(std::string_view name) const noexcept { return get(name).has_value(); }
  /// True when a field of that well-known name is present.
  bool contains(HeaderId id) const noexcept {
    return id == HeaderId::kOther ? get(id).has_value() : (present_ & bit(id)) != 0;
  }
  /// True when a comma-separated value list of name holds token (case-insensitive), as for
  /// "Connection: keep-alive, Upgrade".
  bool contains_token(HeaderId id, std::string_view token) const noexcept {
    if (id != HeaderId::kOther && (present_ & bit(id)) == 0) return false;
    return find_token(id, token);
  }
  /// How many fields have that name.
  std::size_t count(HeaderId id) const noexcept;
  ///@}

  /// @name Iterating
  ///@{

  /// The number of fields.
  std::size_t size() const noexcept { return size_; }
  /// True when there is no field.
  bool empty() const noexcept { return size_ == 0; }
  /// The i-th field (i < size()).
  Field operator[](std::size_t i) const noexcept { return field(entries()[i]); }
  /// The id of the i-th field's name (kOther when it is not well known).
  HeaderId id_at(std::size_t i) const noexcept { return entries()[i].id; }

  /// A forward iterator over the fields, yielding Field values.
  class Iterator {
   public:
    /// The i-th field of h.
    Iterator(const HttpHeaders* h, std::size_t i) noexcept : h_(h), i_(i) {}
    /// The field.
    Field operator*() const noexcept { return (*h_)[i_]; }
    /// The next field.
    Iterator& operator++() noexcept {
      ++i_;
      return *this;
    }
    /// Same position.
    bool operator==(const Iterator& o) const noexcept { return i_ == o.i_; }

   private:
    const HttpHeaders* h_;
    std::size_t i_;
  };
  /// The first field.
  Iterator begin() const noexcept { return {this, 0}; }
  /// Past the last field.
  Iterator end() const noexcept { return {this, size_}; }
  ///@}

  /// Reserves room for a header block of about bytes characters and fields fields.
  void reserve(std::size_t bytes, std::size_t fields);

  /// At least the bytes of the fields written as "Name: value\r\n" lines, found without looking
  /// at them (for encoders that size their buffer first and write in one pass).
  std::size_t wire_size_bound() const noexcept {
    return chars_size_ + std::size_t{size_} * (detail::kMaxHeaderNameLength + 4);
  }

 private:
  friend class HttpParser;  // fills the block directly (see append_block and push)

  struct Entry {
    std::uint32_t name_offset;  // into chars(), unless id != kOther
    std::uint32_t value_offset;
    std::uint32_t value_length;
    std::uint16_t name_length;
    HeaderId id;
  };

  // A small block lives in the object (no allocation for the few fields of a typical response
  // or of a request from a non-browser client); a larger one in storage_. Either holds
  // entry_capacity_ entries, then the characters: [Entry...][chars...].
  static constexpr std::size_t kInlineBytes = 128;
  static constexpr std::uint32_t kInlineEntries = 4;

  const unsigned char* base() const noexcept {
    return storage_.data() ? reinterpret_cast<const unsigned char*>(storage_.data()) : inline_;
  }
  unsigned char* base() noexcept {
    return storage_.data() ? reinterpret_cast<unsigned char*>(storage_.data()) : inline_;
  }
  std::size_t block_capacity() const noexcept {
    return storage_.data() ? storage_.capacity() : kInlineBytes;
  }
  const Entry* entries() const noexcept { return reinterpret_cast<const Entry*>(base()); }
  Entry* entries() noexcept { return reinterpret_cast<Entry*>(base()); }
  const char* chars() const noexcept {
    return reinterpret_cast<const char*>(base()) + entry_capacity_ * sizeof(Entry);
  }
  char* chars() noexcept {
    return reinterpret_cast<char*>(base()) + entry_capacity_ * sizeof(Entry);
  }
  std::size_t char_capacity() const noexcept {
    return block_capacity() - entry_capacity_ * sizeof(Entry);
  }
  // Moves other's fields here and leaves other empty (with its inline block).
  void take(HttpHeaders& other) noexcept {
    storage_ = std::move(other.storage_);
    // The whole inline block in a few vector moves, used or not: cheaper than sizing two copies
    // (the unused bytes are never read, so they need no initialising either).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
    if (!storage_.data()) std::memcpy(inline_, other.inline_, kInlineBytes);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
    size_ = std::exchange(other.size_, 0);
    entry_capacity_ = std::exchange(other.entry_capacity_, kInlineEntries);
    chars_size_ = std::exchange(other.chars_size_, 0);
    present_ = std::exchange(other.present_, 0);
  }
  std::optional<std::string_view> find(HeaderId id) const noexcept;
  bool find_token(HeaderId id, std::string_view token) const noexcept;
  // The bit of a well-known id in present_ (kOther has none: its names must be compared).
  static constexpr std::uint32_t bit(HeaderId id) noexcept {
    return id == HeaderId::kOther ? 0 : std::uint32_t{1} << static_cast<unsigned>(id);
  }
  // Makes room for `fields` more entries and `bytes` more characters.
  void ensure(std::size_t fields, std::size_t bytes) {
    if (fields > entry_capacity_ - size_ || bytes > char_capacity() - chars_size_) {
      grow(fields, bytes);
    }
  }
  void grow(std::size_t fields, std::size_t bytes);
  Field field(const Entry& e) const noexcept {
    const char* c = chars();
    const std::string_view name = e.id != HeaderId::kOther
                                      ? header_name(e.id)
                                      : std::string_view(c + e.name_offset, e.name_length);
    return {name, std::string_view(c + e.value_offset, e.value_length)};
  }
  // Copies text after the characters (room must be ensured); returns its offset.
  std::uint32_t append(std::string_view text) noexcept;
  // For the parser: copies a whole field block once and makes room for `fields` entries; the
  // fields are then pushed with offsets into the copy (the returned offset of its first byte).
  std::uint32_t append_block(std::string_view block, std::size_t fields);
  void push(HeaderId id, std::uint32_t name_offset, std::size_t name_length,
            std::uint32_t value_offset, std::size_t value_length) {
    if (name_length > UINT16_MAX) throw_name_too_long();
    if (size_ == entry_capacity_) grow(1, 0);
    present_ |= bit(id);
    entries()[size_++] = Entry{name_offset, value_offset, static_cast<std::uint32_t>(value_length),
                               static_cast<std::uint16_t>(name_length), id};
  }
  [[noreturn]] static void throw_name_too_long();

  ByteBuf storage_;
  std::uint32_t size_ = 0;
  std::uint32_t entry_capacity_ = kInlineEntries;
  std::uint32_t chars_size_ = 0;
  // Which well-known names have a field: a lookup of one that is absent (the usual case for
  // Transfer-Encoding, Expect, Connection...) answers without looking at the fields.
  std::uint32_t present_ = 0;
  alignas(8) unsigned char inline_[kInlineBytes];  // not initialised: see take()
};

}  // namespace trellis::http
