#include <trellis/pipeline/byte_buf.hpp>

#include <trellis/pipeline/byte_buf_allocator.hpp>

#include <algorithm>
#include <cstdio>

namespace trellis {

namespace detail {

void throw_index_out_of_bounds(std::size_t index, std::size_t length, std::size_t capacity) {
  throw IndexOutOfBoundsError("index " + std::to_string(index) + ", length " +
                              std::to_string(length) + " exceeds capacity " +
                              std::to_string(capacity));
}

void throw_read_out_of_bounds(std::size_t reader_index, std::size_t length,
                              std::size_t writer_index) {
  throw IndexOutOfBoundsError("reader index " + std::to_string(reader_index) + ", length " +
                              std::to_string(length) + " exceeds writer index " +
                              std::to_string(writer_index));
}

}  // namespace detail

namespace {

// Doubling from 64 bytes; past 4 MiB, steps of 4 MiB so a large buffer does not overshoot by
// gigabytes.
std::size_t next_capacity(std::size_t needed, std::size_t max_capacity) {
  constexpr std::size_t kThreshold = std::size_t{4} << 20;
  std::size_t capacity;
  if (needed > kThreshold) {
    capacity = (needed + kThreshold - 1) / kThreshold * kThreshold;
  } else {
    capacity = 64;
    while (capacity < needed) capacity <<= 1;
  }
  return std::min(capacity, max_capacity);
}

}  // namespace

ByteBuf ByteBuf::from(std::string_view text) {
  return from(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

ByteBuf ByteBuf::from(std::span<const std::byte> bytes) {
  ByteBuf buf = ByteBufAllocator::default_allocator().buffer(bytes.size());
  buf.write_bytes(bytes);
  return buf;
}

ByteBuf ByteBuf::share() const {
  if (storage_ == nullptr) return ByteBuf();
  storage_->refs.fetch_add(1, std::memory_order_relaxed);
  return ByteBuf(storage_, offset_, capacity_, max_capacity_, reader_, writer_);
}

ByteBuf ByteBuf::slice(std::size_t index, std::size_t length) const {
  check_index(index, length);
  if (storage_ == nullptr) return ByteBuf();
  storage_->refs.fetch_add(1, std::memory_order_relaxed);
  const auto len = static_cast<std::uint32_t>(length);
  return ByteBuf(storage_, offset_ + static_cast<std::uint32_t>(index), len, len, 0, len);
}

ByteBuf ByteBuf::read_slice(std::size_t length) {
  check_readable(length);
  ByteBuf out = slice(reader_, length);
  reader_ += static_cast<std::uint32_t>(length);
  return out;
}

ByteBuf ByteBuf::copy(std::size_t index, std::size_t length) const {
  check_index(index, length);
  if (storage_ == nullptr) return ByteBuf();
  detail::ByteBufStorage* fresh = storage_->ops->allocate_like(*storage_, length);
  if (length != 0) std::memcpy(fresh->data(), raw() + index, length);
  const auto len = static_cast<std::uint32_t>(length);
  // len <= capacity_ <= max_capacity_: the copy may grow as far as the original could.
  return ByteBuf(fresh, 0, len, max_capacity_, 0, len);
}

void ByteBuf::set_reader_index(std::size_t index) {
  if (index > writer_) {
    throw IndexOutOfBoundsError("reader index " + std::to_string(index) + " exceeds writer index " +
                                std::to_string(writer_));
  }
  reader_ = static_cast<std::uint32_t>(index);
}

void ByteBuf::throw_writer_index(std::size_t index) const {
  throw IndexOutOfBoundsError("writer index " + std::to_string(index) + " outside [reader index " +
                              std::to_string(reader_) + ", capacity " + std::to_string(capacity_) +
                              "]");
}

void ByteBuf::set_index(std::size_t reader_index, std::size_t writer_index) {
  if (reader_index > writer_index || writer_index > capacity_) {
    throw IndexOutOfBoundsError("reader index " + std::to_string(reader_index) + ", writer index " +
                                std::to_string(writer_index) + " invalid for capacity " +
                                std::to_string(capacity_));
  }
  reader_ = static_cast<std::uint32_t>(reader_index);
  writer_ = static_cast<std::uint32_t>(writer_index);
}

void ByteBuf::grow(std::size_t length) {
  const std::size_t needed = std::size_t{writer_} + length;
  if (length > max_capacity_ || needed > max_capacity_) {
    throw IndexOutOfBoundsError("writer index " + std::to_string(writer_) + ", length " +
                                std::to_string(length) + " exceeds max capacity " +
                                std::to_string(max_capacity_));
  }
  // Alone on the storage: the block may already have room past our capacity (pool size classes
  // round up), and nobody else can see it, so take it without copying.
  if (storage_->refs.load(std::memory_order_acquire) == 1) {
    const std::size_t room = storage_->capacity - offset_;
    if (room >= needed) {
      capacity_ = static_cast<std::uint32_t>(std::min<std::size_t>(room, max_capacity_));
      return;
    }
  }
  const std::size_t new_capacity = next_capacity(needed, max_capacity_);
  detail::ByteBufStorage* fresh = storage_->ops->allocate_like(*storage_, new_capacity);
  if (capacity_ != 0) std::memcpy(fresh->data(), raw(), capacity_);
  detail::release_storage_ref(storage_);
  storage_ = fresh;
  offset_ = 0;
  capacity_ = static_cast<std::uint32_t>(new_capacity);
}

void ByteBuf::discard_read_bytes() {
  if (reader_ == 0) return;
  if (storage_->refs.load(std::memory_order_acquire) == 1) {
    const std::uint32_t readable = writer_ - reader_;
    if (readable != 0) std::memmove(raw(), raw() + reader_, readable);
    writer_ = readable;
  } else {
    // Moving bytes would change what the other handles see: move our window instead.
    offset_ += reader_;
    capacity_ -= reader_;
    writer_ -= reader_;
  }
  reader_ = 0;
}

void ByteBuf::get_bytes(std::size_t index, std::span<std::byte> out) const {
  check_index(index, out.size());
  if (!out.empty()) std::memcpy(out.data(), raw() + index, out.size());
}

void ByteBuf::set_bytes(std::size_t index, std::span<const std::byte> in) {
  check_index(index, in.size());
  if (!in.empty()) std::memmove(raw() + index, in.data(), in.size());
}

void ByteBuf::read_bytes(std::span<std::byte> out) {
  check_readable(out.size());
  if (!out.empty()) std::memcpy(out.data(), raw() + reader_, out.size());
  reader_ += static_cast<std::uint32_t>(out.size());
}

void ByteBuf::write_bytes(std::span<const std::byte> in) {
  if (in.empty()) return;
  if (in.size() > capacity_ - writer_ && storage_ != nullptr) {
    const auto at = reinterpret_cast<std::uintptr_t>(in.data());
    const auto begin = reinterpret_cast<std::uintptr_t>(storage_->data());
    if (at >= begin && at < begin + storage_->capacity) {
      // `in` points into our own storage, which growing may free: hold it until the copy is done.
      ByteBuf keep = share();
      ensure_writable(in.size());
      std::memmove(raw() + writer_, in.data(), in.size());
      writer_ += static_cast<std::uint32_t>(in.size());
      return;
    }
  }
  ensure_writable(in.size());
  std::memmove(raw() + writer_, in.data(), in.size());
  writer_ += static_cast<std::uint32_t>(in.size());
}

void ByteBuf::write_bytes(const ByteBuf& other) {
  const std::size_t length = other.readable_bytes();
  if (length == 0) return;
  // Grow first: when `other` is *this, growing moves the bytes, so take the span afterwards.
  // When `other` is another handle on our storage it keeps the old storage alive meanwhile.
  ensure_writable(length);
  std::memmove(raw() + writer_, other.raw() + other.reader_, length);
  writer_ += static_cast<std::uint32_t>(length);
}

std::string ByteBuf::read_string(std::size_t length) {
  check_readable(length);
  std::string out;
  if (length != 0) out.assign(reinterpret_cast<const char*>(raw() + reader_), length);
  reader_ += static_cast<std::uint32_t>(length);
  return out;
}

std::int64_t ByteBuf::index_of(std::size_t from, std::size_t to, std::uint8_t value) const {
  if (storage_ == nullptr) return -1;
  const std::byte* base = raw();
  if (from <= to) {
    to = std::min<std::size_t>(to, capacity_);
    if (from >= to) return -1;
    const void* hit = std::memchr(base + from, value, to - from);
    return hit ? static_cast<const std::byte*>(hit) - base : -1;
  }
  from = std::min<std::size_t>(from, capacity_);
  for (std::size_t i = from; i > to; --i) {
    if (std::to_integer<std::uint8_t>(base[i - 1]) == value)
      return static_cast<std::int64_t>(i - 1);
  }
  return -1;
}

std::string ByteBuf::to_string() const {
  const auto span = readable_span();
  return std::string(reinterpret_cast<const char*>(span.data()), span.size());
}

std::string ByteBuf::hex_dump() const {
  const std::size_t length = readable_bytes();
  if (length == 0) return {};
  static constexpr char kDigits[] = "0123456789abcdef";
  static constexpr std::string_view kTop =
      "         +-------------------------------------------------+\n"
      "         |  0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f |\n"
      "+--------+-------------------------------------------------+----------------+";
  static constexpr std::string_view kBottom =
      "\n+--------+-------------------------------------------------+----------------+";
  const std::byte* bytes = raw();
  std::string out;
  const std::size_t rows = (length + 15) / 16;
  out.reserve(kTop.size() + kBottom.size() + rows * 80);
  out.append(kTop);
  for (std::size_t row = 0; row < rows; ++row) {
    const std::size_t start = reader_ + row * 16;
    const std::size_t count = std::min<std::size_t>(16, length - row * 16);
    char prefix[16];
    std::snprintf(prefix, sizeof(prefix), "\n|%08zx|", start & 0xffffffffU);
    out.append(prefix);
    for (std::size_t i = 0; i < 16; ++i) {
      if (i < count) {
        const auto b = std::to_integer<unsigned>(bytes[start + i]);
        out.push_back(' ');
        out.push_back(kDigits[b >> 4]);
        out.push_back(kDigits[b & 0xf]);
      } else {
        out.append("   ");
      }
    }
    out.append(" |");
    for (std::size_t i = 0; i < 16; ++i) {
      if (i < count) {
        const auto b = std::to_integer<unsigned>(bytes[start + i]);
        out.push_back(b > 0x1f && b < 0x7f ? static_cast<char>(b) : '.');
      } else {
        out.push_back(' ');
      }
    }
    out.push_back('|');
  }
  out.append(kBottom);
  return out;
}

}  // namespace trellis
