// CompositeByteBuf: a sequence of ByteBufs read as one range without copying, for cumulation in
// decoders and for gathering writes (writev).
#pragma once

#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <span>
#include <string>
#include <utility>

namespace trellis {

/// The readable bytes of the added components, back to back, with one reader index. Indexes are
/// positions in that concatenation: writer_index() is the total length, and
/// discard_read_components() drops fully read components and shifts both indexes down.
/// Components are read-only here; the composite never writes into them.
///
/// The typed integer getters and readers (`get_u32`, `read_u16_le`, ...) are listed under
/// ByteBufReadAccessors, which this class derives from; an integer may span components.
///
/// Threading: one thread at a time (the components are handles, see ByteBuf).
///
/// Errors: an access outside [0, writer index) and a read of more than the readable bytes throw
/// IndexOutOfBoundsError and leave the reader index unchanged.
class CompositeByteBuf : public ByteBufReadAccessors<CompositeByteBuf> {
 public:
  /// Up to this many components live inside the object; more move to the heap.
  static constexpr std::size_t kInlineComponents = 8;

  /// An empty composite. `allocator` supplies the copies made by read_slice() across components
  /// and by consolidate().
  explicit CompositeByteBuf(
      ByteBufAllocator& allocator = ByteBufAllocator::default_allocator()) noexcept
      : allocator_(&allocator) {}
  /// Takes over the other composite's components and indexes; `other` becomes empty.
  CompositeByteBuf(CompositeByteBuf&& other) noexcept;
  /// Drops this composite's components, then takes over the other's; `other` becomes empty.
  CompositeByteBuf& operator=(CompositeByteBuf&& other) noexcept;
  CompositeByteBuf(const CompositeByteBuf&) = delete;
  CompositeByteBuf& operator=(const CompositeByteBuf&) = delete;
  /// Drops every component.
  ~CompositeByteBuf() { clear(); }

  /// Appends the readable bytes of `buffer` (taking the handle). A buffer with nothing readable is
  /// dropped, so every component has at least one byte.
  void add_component(ByteBuf buffer);
  /// How many components the composite holds.
  std::size_t num_components() const noexcept { return size_; }
  /// The i-th component; its readable bytes are the ones this composite presents.
  const ByteBuf& component(std::size_t i) const noexcept { return at(i).buf; }

  /// Where the next read starts.
  std::size_t reader_index() const noexcept { return reader_; }
  /// The total length of the components (after the discarded ones).
  std::size_t writer_index() const noexcept { return writer_; }
  /// `writer_index() - reader_index()`.
  std::size_t readable_bytes() const noexcept { return writer_ - reader_; }
  /// True when at least one byte is readable.
  bool is_readable() const noexcept { return writer_ > reader_; }
  /// Moves the reader index (back or forth); throws IndexOutOfBoundsError past the writer index.
  void set_reader_index(std::size_t index);
  /// Advances the reader index by `length`; throws IndexOutOfBoundsError when fewer bytes are
  /// readable.
  void skip_bytes(std::size_t length) {
    check_readable(length);
    advance(length);
  }
  /// Drops every component (and resets the indexes).
  void clear() noexcept;
  /// Drops the components before the reader index; indexes shift down by their length.
  void discard_read_components();

  /// Copies bytes from `index` into all of `out`; moves no index. Throws IndexOutOfBoundsError
  /// unless they lie below the writer index.
  void get_bytes(std::size_t index, std::span<std::byte> out) const;
  /// Fills `out` completely from the readable bytes (throws IndexOutOfBoundsError if fewer are
  /// readable).
  void read_bytes(std::span<std::byte> out);
  /// The next `length` readable bytes as a string; advances the reader index past them. Throws
  /// IndexOutOfBoundsError when fewer are readable.
  std::string read_string(std::size_t length);
  /// The next `length` bytes as a ByteBuf: a slice sharing storage when they lie in one
  /// component, else a copy from the allocator. Advances the reader index. Throws
  /// IndexOutOfBoundsError when fewer bytes are readable.
  ByteBuf read_slice(std::size_t length);

  /// Like ByteBuf::index_of() over the composite's indexes (clamped to the writer index).
  std::int64_t index_of(std::size_t from, std::size_t to, std::uint8_t value) const;

  /// Calls `fn(std::span<const std::byte>)` for each contiguous run of readable bytes, in order.
  template <class Fn>
  void for_each_readable(Fn&& fn) const {
    for (std::size_t i = current_; i < size_; ++i) {
      std::span<const std::byte> bytes = at(i).buf.readable_span();
      if (i == current_) bytes = bytes.subspan(reader_ - at(i).start);
      if (!bytes.empty()) fn(bytes);
    }
  }
  /// Fills `out` with the readable runs for writev; returns how many entries were filled (fewer
  /// than the runs if `out` is too small: write those, skip_bytes, and ask again).
  std::size_t to_iovecs(std::span<struct iovec> out) const;
  /// Makes the readable bytes one component (copying only if they span several) and returns a
  /// handle sharing it. Read components are dropped: the reader index becomes 0.
  ByteBuf consolidate();
  /// The readable bytes as a string (indexes do not move).
  std::string to_string() const;

 private:
  friend class ByteBufReadAccessors<CompositeByteBuf>;

  struct Component {
    ByteBuf buf;
    std::size_t start;  // index of its first readable byte in the composite
    std::size_t end() const noexcept { return start + buf.readable_bytes(); }
  };

  Component* components() noexcept {
    return heap_ ? heap_ : std::launder(reinterpret_cast<Component*>(inline_));
  }
  const Component* components() const noexcept {
    return heap_ ? heap_ : std::launder(reinterpret_cast<const Component*>(inline_));
  }
  Component& at(std::size_t i) noexcept { return components()[i]; }
  const Component& at(std::size_t i) const noexcept { return components()[i]; }
  void take(CompositeByteBuf& other) noexcept;
  void reserve_one_more();
  void erase_front(std::size_t n) noexcept;
  // The component holding byte `index` (index < writer_).
  std::size_t component_at(std::size_t index) const noexcept;
  void advance(std::size_t length) noexcept {
    reader_ += length;
    if (reader_ >= cur_end_ && current_ < size_) {
      while (current_ < size_ && at(current_).end() <= reader_) ++current_;
      sync_current();
    }
  }
  // Recomputes the cur_ fields after current_ or the components changed.
  void sync_current() noexcept {
    if (current_ < size_) {
      const Component& c = at(current_);
      cur_data_ = c.buf.readable_span().data();
      cur_start_ = c.start;
      cur_end_ = c.end();
    } else {
      cur_data_ = nullptr;
      cur_start_ = cur_end_ = writer_;
    }
  }
  void check_index(std::size_t index, std::size_t length) const {
    if (index > writer_ || length > writer_ - index) {
      detail::throw_index_out_of_bounds(index, length, writer_);
    }
  }
  void check_readable(std::size_t length) const {
    if (length > writer_ - reader_) detail::throw_read_out_of_bounds(reader_, length, writer_);
  }
  void copy_out(std::size_t index, std::span<std::byte> out) const;

  template <class T, bool kLittle>
  T get(std::size_t index) const {
    check_index(index, sizeof(T));
    const Component& c = at(component_at(index));
    const std::size_t local = index - c.start;
    if (c.buf.readable_bytes() - local >= sizeof(T)) {
      return detail::load_int<T, kLittle>(c.buf.readable_span().data() + local);
    }
    std::byte tmp[sizeof(T)];
    copy_out(index, tmp);
    return detail::load_int<T, kLittle>(tmp);
  }
  template <class T, bool kLittle>
  T read() {
    if (cur_end_ - reader_ >= sizeof(T)) {
      const T value = detail::load_int<T, kLittle>(cur_data_ + (reader_ - cur_start_));
      advance(sizeof(T));
      return value;
    }
    // Across a component boundary, or not readable at all.
    check_readable(sizeof(T));
    std::byte tmp[sizeof(T)];
    copy_out(reader_, tmp);
    advance(sizeof(T));
    return detail::load_int<T, kLittle>(tmp);
  }

  ByteBufAllocator* allocator_;
  std::size_t reader_ = 0;
  std::size_t writer_ = 0;
  std::size_t current_ = 0;  // the component holding reader_ (size_ when nothing is readable)
  // The current component's first readable byte and its [start, end) in the composite, cached
  // for the read fast path (end == start == writer_ when nothing is readable).
  const std::byte* cur_data_ = nullptr;
  std::size_t cur_start_ = 0;
  std::size_t cur_end_ = 0;
  std::size_t size_ = 0;
  std::size_t heap_capacity_ = 0;
  Component* heap_ = nullptr;  // nullptr while the components fit inline_
  alignas(Component) std::byte inline_[kInlineComponents * sizeof(Component)];
};

}  // namespace trellis
