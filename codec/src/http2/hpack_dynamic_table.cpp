#include <trellis/codec/http2/hpack_dynamic_table.hpp>

#include <algorithm>
#include <utility>

namespace trellis::http2 {

void HpackDynamicTable::set_max_size(std::size_t max_size) {
  max_size_ = max_size;
  while (size_ > max_size_) evict_oldest();
}

void HpackDynamicTable::clear() noexcept {
  while (count_ > 0) evict_oldest();
}

void HpackDynamicTable::evict_oldest() noexcept {
  const Slot& oldest = slot(count_ - 1);
  size_ -= kEntryOverhead + oldest.name.size() + oldest.value.size();
  --count_;
}

void HpackDynamicTable::grow_slots() {
  // Every entry takes at least 32 octets: a table never holds more than max_size / 32 of them.
  const std::size_t limit = std::max<std::size_t>(1, max_size_ / kEntryOverhead);
  std::vector<Slot> grown(std::min(limit, std::max<std::size_t>(8, slots_.size() * 2)));
  // Oldest first, so that entry 0 lands at count_ - 1; the evicted slots' strings come along to
  // keep their capacity.
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    grown[i] = std::move(slots_[(newest_ + 1 + i) % slots_.size()]);
  }
  // The live entries were the last count_ of that walk.
  std::rotate(grown.begin(), grown.begin() + static_cast<std::ptrdiff_t>(slots_.size() - count_),
              grown.begin() + static_cast<std::ptrdiff_t>(slots_.size()));
  slots_ = std::move(grown);
  newest_ = count_ == 0 ? slots_.size() - 1 : count_ - 1;
}

void HpackDynamicTable::add(std::string_view name, std::string_view value) {
  const std::size_t entry = kEntryOverhead + name.size() + value.size();
  if (entry > max_size_) {
    clear();
    return;
  }
  while (size_ + entry > max_size_) evict_oldest();
  if (count_ == slots_.size()) grow_slots();
  newest_ = (newest_ + 1) % slots_.size();
  Slot& s = slots_[newest_];
  s.name.assign(name);
  s.value.assign(value);
  ++count_;
  size_ += entry;
}

}  // namespace trellis::http2
