// Header fields storage and lookup (see http_headers.hpp).
#include <trellis/codec/http/http_headers.hpp>

#include <array>

#include <trellis/pipeline/error.hpp>

namespace trellis::http {

namespace {
constexpr std::array<std::string_view, static_cast<std::size_t>(HeaderId::kCount)> kNames = {
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

constexpr unsigned char lower(unsigned char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<unsigned char>(c + 32) : c;
}

bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }
}  // namespace

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(static_cast<unsigned char>(a[i])) != lower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view header_name(HeaderId id) noexcept { return kNames[static_cast<std::size_t>(id)]; }

HeaderId header_id(std::string_view name) noexcept {
  // A linear scan that rejects on length and first letter before comparing characters.
  if (name.empty()) return HeaderId::kOther;
  const unsigned char first = lower(static_cast<unsigned char>(name[0]));
  for (std::size_t i = 1; i < kNames.size(); ++i) {
    const auto& known = kNames[i];
    if (known.size() == name.size() && lower(static_cast<unsigned char>(known[0])) == first &&
        iequals(known, name)) {
      return static_cast<HeaderId>(i);
    }
  }
  return HeaderId::kOther;
}

HttpHeaders& HttpHeaders::operator=(const HttpHeaders& other) {
  if (this != &other) {
    arena_ = other.arena_;
    entries_ = other.entries_;
  }
  return *this;
}

std::uint32_t HttpHeaders::append(std::string_view text) {
  if (arena_.size() + text.size() > UINT32_MAX)
    throw InvalidArgumentError("header block too large");
  auto offset = static_cast<std::uint32_t>(arena_.size());
  arena_.append(text);
  return offset;
}

void HttpHeaders::add(std::string_view name, std::string_view value) {
  auto id = header_id(name);
  if (id != HeaderId::kOther) {
    add(id, value);
    return;
  }
  if (name.size() > UINT16_MAX) throw InvalidArgumentError("header name too long");
  Entry e{};
  e.id = HeaderId::kOther;
  e.name_offset = append(name);
  e.name_length = static_cast<std::uint16_t>(name.size());
  e.value_offset = append(value);
  e.value_length = static_cast<std::uint32_t>(value.size());
  entries_.push_back(e);
}

void HttpHeaders::add(HeaderId id, std::string_view value) {
  Entry e{};
  e.id = id;
  e.value_offset = append(value);
  e.value_length = static_cast<std::uint32_t>(value.size());
  entries_.push_back(e);
}

void HttpHeaders::set(std::string_view name, std::string_view value) {
  remove(name);
  add(name, value);
}

std::size_t HttpHeaders::remove(std::string_view name) {
  auto id = header_id(name);
  std::size_t before = entries_.size();
  std::erase_if(entries_, [&](const Entry& e) {
    return id != HeaderId::kOther ? e.id == id
                                  : e.id == HeaderId::kOther && iequals(field(e).name, name);
  });
  // The arena keeps the removed characters until clear(): removal is rare.
  return before - entries_.size();
}

void HttpHeaders::clear() noexcept {
  arena_.clear();
  entries_.clear();
}

HttpHeaders::Field HttpHeaders::field(const Entry& e) const noexcept {
  std::string_view name = e.id != HeaderId::kOther
                              ? header_name(e.id)
                              : std::string_view(arena_.data() + e.name_offset, e.name_length);
  return {name, std::string_view(arena_.data() + e.value_offset, e.value_length)};
}

std::optional<std::string_view> HttpHeaders::get(HeaderId id) const noexcept {
  for (const auto& e : entries_) {
    if (e.id == id) return field(e).value;
  }
  return std::nullopt;
}

std::optional<std::string_view> HttpHeaders::get(std::string_view name) const noexcept {
  auto id = header_id(name);
  if (id != HeaderId::kOther) return get(id);
  for (const auto& e : entries_) {
    if (e.id == HeaderId::kOther) {
      auto f = field(e);
      if (iequals(f.name, name)) return f.value;
    }
  }
  return std::nullopt;
}

std::vector<std::string_view> HttpHeaders::get_all(std::string_view name) const {
  std::vector<std::string_view> values;
  auto id = header_id(name);
  for (const auto& e : entries_) {
    if (id != HeaderId::kOther ? e.id == id
                               : e.id == HeaderId::kOther && iequals(field(e).name, name)) {
      values.push_back(field(e).value);
    }
  }
  return values;
}

std::size_t HttpHeaders::count(HeaderId id) const noexcept {
  std::size_t n = 0;
  for (const auto& e : entries_) n += e.id == id;
  return n;
}

bool HttpHeaders::contains_token(HeaderId id, std::string_view token) const noexcept {
  for (const auto& e : entries_) {
    if (e.id != id) continue;
    std::string_view list = field(e).value;
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
  arena_.reserve(bytes);
  entries_.reserve(fields);
}

}  // namespace trellis::http
