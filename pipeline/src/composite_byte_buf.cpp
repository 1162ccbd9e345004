#include <trellis/pipeline/composite_byte_buf.hpp>

#include <algorithm>
#include <cstring>
#include <memory>

namespace trellis {

CompositeByteBuf::CompositeByteBuf(CompositeByteBuf&& other) noexcept
    : allocator_(other.allocator_) {
  take(other);
}

CompositeByteBuf& CompositeByteBuf::operator=(CompositeByteBuf&& other) noexcept {
  if (this != &other) {
    clear();
    allocator_ = other.allocator_;
    take(other);
  }
  return *this;
}

void CompositeByteBuf::take(CompositeByteBuf& other) noexcept {
  reader_ = other.reader_;
  writer_ = other.writer_;
  current_ = other.current_;
  size_ = other.size_;
  heap_capacity_ = other.heap_capacity_;
  heap_ = other.heap_;
  if (heap_ == nullptr) {
    Component* from = other.components();
    Component* to = components();
    for (std::size_t i = 0; i < size_; ++i) {
      ::new (static_cast<void*>(to + i)) Component(std::move(from[i]));
      from[i].~Component();
    }
  }
  other.heap_ = nullptr;
  other.heap_capacity_ = 0;
  other.size_ = 0;
  other.reader_ = other.writer_ = other.current_ = 0;
  other.sync_current();
  sync_current();
}

void CompositeByteBuf::clear() noexcept {
  Component* c = components();
  for (std::size_t i = 0; i < size_; ++i) c[i].~Component();
  if (heap_ != nullptr) {
    ::operator delete(static_cast<void*>(heap_));
    heap_ = nullptr;
    heap_capacity_ = 0;
  }
  size_ = 0;
  reader_ = writer_ = current_ = 0;
  sync_current();
}

void CompositeByteBuf::reserve_one_more() {
  const std::size_t capacity = heap_ ? heap_capacity_ : kInlineComponents;
  if (size_ < capacity) return;
  const std::size_t new_capacity = capacity * 2;
  auto* fresh = static_cast<Component*>(::operator new(new_capacity * sizeof(Component)));
  Component* old = components();
  for (std::size_t i = 0; i < size_; ++i) {
    ::new (static_cast<void*>(fresh + i)) Component(std::move(old[i]));
    old[i].~Component();
  }
  if (heap_ != nullptr) {
    ::operator delete(static_cast<void*>(heap_));
  }
  heap_ = fresh;
  heap_capacity_ = new_capacity;
}

void CompositeByteBuf::erase_front(std::size_t n) noexcept {
  Component* c = components();
  for (std::size_t i = 0; i < n; ++i) c[i].~Component();
  for (std::size_t i = n; i < size_; ++i) {
    ::new (static_cast<void*>(c + i - n)) Component(std::move(c[i]));
    c[i].~Component();
  }
  size_ -= n;
}

void CompositeByteBuf::add_component(ByteBuf buffer) {
  const std::size_t length = buffer.readable_bytes();
  if (length == 0) return;
  reserve_one_more();
  const bool was_drained = current_ == size_;
  ::new (static_cast<void*>(components() + size_)) Component{std::move(buffer), writer_};
  ++size_;
  writer_ += length;
  if (was_drained) sync_current();
}

void CompositeByteBuf::set_reader_index(std::size_t index) {
  if (index > writer_) {
    throw IndexOutOfBoundsError("reader index " + std::to_string(index) + " exceeds writer index " +
                                std::to_string(writer_));
  }
  reader_ = index;
  current_ = index == writer_ ? size_ : component_at(index);
  sync_current();
}

void CompositeByteBuf::discard_read_components() {
  if (current_ == 0) return;
  const std::size_t removed = current_ < size_ ? at(current_).start : writer_;
  erase_front(current_);
  for (std::size_t i = 0; i < size_; ++i) at(i).start -= removed;
  reader_ -= removed;
  writer_ -= removed;
  current_ = 0;
  sync_current();
}

std::size_t CompositeByteBuf::component_at(std::size_t index) const noexcept {
  const Component* c = components();
  if (current_ < size_ && index >= c[current_].start && index < c[current_].end()) {
    return current_;
  }
  // The first component ending after `index`.
  const Component* hit = std::upper_bound(
      c, c + size_, index, [](std::size_t i, const Component& comp) { return i < comp.end(); });
  return static_cast<std::size_t>(hit - c);
}

void CompositeByteBuf::copy_out(std::size_t index, std::span<std::byte> out) const {
  if (out.empty()) return;
  std::size_t i = component_at(index);
  std::size_t done = 0;
  while (done < out.size()) {
    const Component& c = at(i++);
    const std::span<const std::byte> bytes = c.buf.readable_span().subspan(index + done - c.start);
    const std::size_t n = std::min(bytes.size(), out.size() - done);
    std::memcpy(out.data() + done, bytes.data(), n);
    done += n;
  }
}

void CompositeByteBuf::get_bytes(std::size_t index, std::span<std::byte> out) const {
  check_index(index, out.size());
  copy_out(index, out);
}

void CompositeByteBuf::read_bytes(std::span<std::byte> out) {
  check_readable(out.size());
  copy_out(reader_, out);
  advance(out.size());
}

std::string CompositeByteBuf::read_string(std::size_t length) {
  check_readable(length);
  std::string out(length, '\0');
  copy_out(reader_, std::as_writable_bytes(std::span<char>(out.data(), out.size())));
  advance(length);
  return out;
}

ByteBuf CompositeByteBuf::read_slice(std::size_t length) {
  check_readable(length);
  if (length == 0) return ByteBuf();
  const Component& c = at(current_);
  const std::size_t local = reader_ - c.start;
  ByteBuf out;
  if (c.buf.readable_bytes() - local >= length) {
    out = c.buf.slice(c.buf.reader_index() + local, length);
  } else {
    out = allocator_->buffer(length);
    copy_out(reader_, out.writable_span().first(length));
    out.set_writer_index(length);
  }
  advance(length);
  return out;
}

std::int64_t CompositeByteBuf::index_of(std::size_t from, std::size_t to,
                                        std::uint8_t value) const {
  if (from <= to) {
    to = std::min(to, writer_);
    if (from >= to) return -1;
    for (std::size_t i = component_at(from); i < size_ && at(i).start < to; ++i) {
      const Component& c = at(i);
      const std::size_t begin = std::max(from, c.start);
      const std::size_t end = std::min(to, c.end());
      const std::byte* base = c.buf.readable_span().data();
      const void* hit = std::memchr(base + (begin - c.start), value, end - begin);
      if (hit != nullptr) {
        return static_cast<std::int64_t>(c.start) + (static_cast<const std::byte*>(hit) - base);
      }
    }
    return -1;
  }
  from = std::min(from, writer_);
  if (from <= to) return -1;
  for (std::size_t i = component_at(from - 1) + 1; i-- > 0;) {
    const Component& c = at(i);
    if (c.end() <= to) break;
    const std::byte* base = c.buf.readable_span().data();
    for (std::size_t j = std::min(from, c.end()); j > std::max(to, c.start); --j) {
      if (std::to_integer<std::uint8_t>(base[j - 1 - c.start]) == value) {
        return static_cast<std::int64_t>(j - 1);
      }
    }
  }
  return -1;
}

std::size_t CompositeByteBuf::to_iovecs(std::span<struct iovec> out) const {
  std::size_t n = 0;
  for (std::size_t i = current_; i < size_ && n < out.size(); ++i) {
    std::span<const std::byte> bytes = at(i).buf.readable_span();
    if (i == current_) bytes = bytes.subspan(reader_ - at(i).start);
    // writev takes non-const pointers but only reads through them.
    out[n].iov_base = const_cast<std::byte*>(bytes.data());
    out[n].iov_len = bytes.size();
    ++n;
  }
  return n;
}

ByteBuf CompositeByteBuf::consolidate() {
  discard_read_components();
  if (size_ == 0) return ByteBuf();
  if (size_ > 1) {
    ByteBuf merged = allocator_->buffer(readable_bytes());
    for_each_readable([&merged](std::span<const std::byte> bytes) { merged.write_bytes(bytes); });
    clear();
    add_component(std::move(merged));
  } else {
    // One component: trim what was read from it instead of copying.
    Component& c = at(0);
    c.buf.skip_bytes(reader_);
    writer_ -= reader_;
    reader_ = 0;
    sync_current();
  }
  return at(0).buf.share();
}

std::string CompositeByteBuf::to_string() const {
  std::string out;
  out.reserve(readable_bytes());
  for_each_readable([&out](std::span<const std::byte> bytes) {
    out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  });
  return out;
}

}  // namespace trellis
