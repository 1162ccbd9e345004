#include <trellis/codec/http2/http2_headers.hpp>

namespace trellis::http2 {

Http2Headers::Http2Headers(std::initializer_list<Field> fields) {
  for (const Field& f : fields) add(f.name, f.value, f.sensitive);
}

void Http2Headers::add(std::string_view name, std::string_view value, bool sensitive) {
  const auto offset = static_cast<std::uint32_t>(text_.size());
  text_.append(name);
  text_.append(value);
  const Entry e{offset, static_cast<std::uint32_t>(name.size()),
                offset + static_cast<std::uint32_t>(name.size()),
                static_cast<std::uint32_t>(value.size()), sensitive};
  if (!name.empty() && name.front() == ':') {
    entries_.insert(entries_.begin() + static_cast<std::ptrdiff_t>(pseudo_count_), e);
    ++pseudo_count_;
  } else {
    entries_.push_back(e);
  }
}

void Http2Headers::clear() noexcept {
  text_.clear();
  entries_.clear();
  pseudo_count_ = 0;
}

std::optional<std::string_view> Http2Headers::get(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < size(); ++i) {
    const Field f = (*this)[i];
    if (f.name == name) return f.value;
  }
  return std::nullopt;
}

std::size_t Http2Headers::header_list_size() const noexcept {
  std::size_t n = 0;
  for (const Entry& e : entries_) n += 32 + e.name_length + e.value_length;
  return n;
}

bool operator==(const Http2Headers& a, const Http2Headers& b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto x = a[i], y = b[i];
    if (x.name != y.name || x.value != y.value || x.sensitive != y.sensitive) return false;
  }
  return true;
}

}  // namespace trellis::http2
