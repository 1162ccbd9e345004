// Header fields storage and lookup (see http_headers.hpp).
#include <trellis/codec/http/http_headers.hpp>

#include <algorithm>
#include <bit>
#include <cstring>

#include <trellis/codec/http/http_head_writer.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/pooled_byte_buf_allocator.hpp>

namespace trellis::http {

namespace {
bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }

// Characters and entries are addressed with 32-bit offsets; a ByteBuf is smaller still.
constexpr std::size_t kMaxBlock = ByteBuf::kMaxCapacity;
}  // namespace

HttpHeaders& HttpHeaders::operator=(const HttpHeaders& other) {
  if (this != &other) {
    clear();
    if (other.size_ == 0) return *this;
    ensure(other.size_, other.chars_size_);
    std::memcpy(entries(), other.entries(), other.size_ * sizeof(Entry));
    std::memcpy(chars(), other.chars(), other.chars_size_);
    size_ = other.size_;
    chars_size_ = other.chars_size_;
    present_ = other.present_;
  }
  return *this;
}

void HttpHeaders::grow(std::size_t fields, std::size_t bytes) {
  const std::size_t old_chars = char_capacity();
  if (fields > kMaxBlock / sizeof(Entry) || bytes > kMaxBlock) {
    throw InvalidArgumentError("header block too large");
  }
  // At least double what overflows, and start at 8 fields and 128 characters.
  std::size_t entry_capacity = entry_capacity_;
  if (fields > entry_capacity_ - size_) {
    entry_capacity = std::max<std::size_t>({size_ + fields, 2 * entry_capacity_, 8});
  }
  std::size_t char_capacity = old_chars;
  if (bytes > old_chars - chars_size_) {
    char_capacity = std::max<std::size_t>({chars_size_ + bytes, 2 * old_chars, 128});
  }
  std::size_t total = entry_capacity * sizeof(Entry) + char_capacity;
  if (total > kMaxBlock) throw InvalidArgumentError("header block too large");
  // The pool hands out power-of-two blocks: the rounding is free room for characters.
  if (total <= PooledByteBufAllocator::kMaxSizeClass) total = std::bit_ceil(total);
  ByteBuf storage = ByteBufAllocator::default_allocator().buffer(total);
  auto* block = reinterpret_cast<char*>(storage.data());
  if (size_ > 0) std::memcpy(block, entries(), size_ * sizeof(Entry));
  if (chars_size_ > 0) {
    std::memcpy(block + entry_capacity * sizeof(Entry), chars(), chars_size_);
  }
  storage_ = std::move(storage);
  entry_capacity_ = static_cast<std::uint32_t>(entry_capacity);
}

std::uint32_t HttpHeaders::append(std::string_view text) noexcept {
  const auto offset = chars_size_;
  put_text(chars() + offset, text);  // short values are copied inline
  chars_size_ += static_cast<std::uint32_t>(text.size());
  return offset;
}

std::uint32_t HttpHeaders::append_block(std::string_view block, std::size_t fields) {
  ensure(fields, block.size());
  return append(block);
}

void HttpHeaders::throw_name_too_long() { throw InvalidArgumentError("header name too long"); }

void HttpHeaders::add(std::string_view name, std::string_view value) {
  auto id = header_id(name);
  if (id != HeaderId::kOther) {
    add(id, value);
    return;
  }
  if (name.size() > UINT16_MAX) throw_name_too_long();
  ensure(1, name.size() + value.size());
  const auto name_offset = append(name);
  push(HeaderId::kOther, name_offset, name.size(), append(value), value.size());
}

void HttpHeaders::add(HeaderId id, std::string_view value) {
  ensure(1, value.size());
  // append + push with the block's address computed once (each asks whether it is inline).
  unsigned char* const block = base();
  const std::uint32_t offset = chars_size_;
  put_text(reinterpret_cast<char*>(block) + entry_capacity_ * sizeof(Entry) + offset, value);
  reinterpret_cast<Entry*>(block)[size_] =
      Entry{0, offset, static_cast<std::uint32_t>(value.size()), 0, id};
  chars_size_ = offset + static_cast<std::uint32_t>(value.size());
  ++size_;
  present_ |= bit(id);
}

void HttpHeaders::set(std::string_view name, std::string_view value) {
  remove(name);
  add(name, value);
}

std::size_t HttpHeaders::remove(std::string_view name) {
  auto id = header_id(name);
  Entry* first = entries();
  Entry* last = std::remove_if(first, first + size_, [&](const Entry& e) {
    return id != HeaderId::kOther ? e.id == id
                                  : e.id == HeaderId::kOther && iequals(field(e).name, name);
  });
  // The characters of removed fields stay until clear(): removal is rare.
  const auto removed = static_cast<std::size_t>(first + size_ - last);
  size_ = static_cast<std::uint32_t>(last - first);
  if (id != HeaderId::kOther && removed > 0) present_ &= ~bit(id);
  return removed;
}

void HttpHeaders::clear() noexcept {
  // The block is kept for reuse.
  size_ = 0;
  chars_size_ = 0;
  present_ = 0;
}

std::optional<std::string_view> HttpHeaders::find(HeaderId id) const noexcept {
  const Entry* e = entries();
  for (std::size_t i = 0; i < size_; ++i) {
    if (e[i].id == id) return field(e[i]).value;
  }
  return std::nullopt;
}

std::optional<std::string_view> HttpHeaders::get(std::string_view name) const noexcept {
  auto id = header_id(name);
  if (id != HeaderId::kOther) return get(id);
  const Entry* e = entries();
  for (std::size_t i = 0; i < size_; ++i) {
    if (e[i].id == HeaderId::kOther) {
      auto f = field(e[i]);
      if (iequals(f.name, name)) return f.value;
    }
  }
  return std::nullopt;
}

std::vector<std::string_view> HttpHeaders::get_all(std::string_view name) const {
  std::vector<std::string_view> values;
  auto id = header_id(name);
  const Entry* e = entries();
  for (std::size_t i = 0; i < size_; ++i) {
    if (id != HeaderId::kOther ? e[i].id == id
                               : e[i].id == HeaderId::kOther && iequals(field(e[i]).name, name)) {
      values.push_back(field(e[i]).value);
    }
  }
  return values;
}

std::size_t HttpHeaders::count(HeaderId id) const noexcept {
  if (id != HeaderId::kOther && (present_ & bit(id)) == 0) return 0;
  const Entry* e = entries();
  std::size_t n = 0;
  for (std::size_t i = 0; i < size_; ++i) n += e[i].id == id;
  return n;
}

bool HttpHeaders::find_token(HeaderId id, std::string_view token) const noexcept {
  const Entry* e = entries();
  for (std::size_t i = 0; i < size_; ++i) {
    if (e[i].id != id) continue;
    std::string_view list = field(e[i]).value;
    while (!list.empty()) {
      auto comma = list.find(',');
      auto item = list.substr(0, comma);
      while (!item.empty() && is_ows(item.front())) item.remove_prefix(1);
      while (!item.empty() && is_ows(item.back())) item.remove_suffix(1);
      if (iequals(item, token)) return true;
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
  return false;
}

void HttpHeaders::reserve(std::size_t bytes, std::size_t fields) {
  const std::size_t more_fields = fields > size_ ? fields - size_ : 0;
  const std::size_t more_bytes = bytes > chars_size_ ? bytes - chars_size_ : 0;
  ensure(more_fields, more_bytes);
}

}  // namespace trellis::http
