// ByteBuf: a move-only RAII handle over reference-counted byte storage, with reader and writer
// indexes, big- and little-endian accessors, and zero-copy shares and slices.
#pragma once

#include <trellis/pipeline/byte_accessors.hpp>
#include <trellis/pipeline/error.hpp>

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace trellis {

class ByteBufAllocator;

namespace detail {

struct ByteBufStorage;

// How the allocator that made a storage frees it and makes more like it. Each allocator keeps one
// static table, so the table outlives every storage that points at it.
struct ByteBufStorageOps {
  // Gives back a storage whose reference count reached zero.
  void (*release)(ByteBufStorage* storage) noexcept;
  // A new storage (reference count 1) of at least `capacity` bytes from the allocator of `like`.
  ByteBufStorage* (*allocate_like)(const ByteBufStorage& like, std::size_t capacity);
};

// The header in front of the data, in the same allocation (or pool block) as the data.
struct alignas(16) ByteBufStorage {
  ByteBufStorage(std::uint32_t data_capacity, const ByteBufStorageOps* storage_ops,
                 void* storage_owner) noexcept
      : refs(1), capacity(data_capacity), ops(storage_ops), owner(storage_owner) {}

  std::byte* data() noexcept { return reinterpret_cast<std::byte*>(this + 1); }

  std::atomic<std::uint32_t> refs;
  std::uint32_t capacity;  // usable bytes after the header
  const ByteBufStorageOps* ops;
  void* owner;                     // allocator specific: a thread cache, a pool, a counter block
  ByteBufStorage* next = nullptr;  // free-list link while the storage sits in a pool
};
static_assert(sizeof(ByteBufStorage) == 32, "the header keeps the data 16-byte aligned");

inline void release_storage_ref(ByteBufStorage* storage) noexcept {
  // A count of 1 seen by the only owner cannot change under it, so the atomic RMW is skipped.
  if (storage->refs.load(std::memory_order_acquire) == 1 ||
      storage->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    storage->ops->release(storage);
  }
}

template <class U>
constexpr U byte_swap(U value) noexcept {
  if constexpr (sizeof(U) == 1) {
    return value;
  } else if constexpr (sizeof(U) == 2) {
    return __builtin_bswap16(value);
  } else if constexpr (sizeof(U) == 4) {
    return __builtin_bswap32(value);
  } else {
    static_assert(sizeof(U) == 8);
    return __builtin_bswap64(value);
  }
}

template <class T, bool kLittle>
inline T load_int(const std::byte* p) noexcept {
  using U = std::make_unsigned_t<T>;
  U value;
  std::memcpy(&value, p, sizeof(U));
  if constexpr (kLittle != (std::endian::native == std::endian::little)) value = byte_swap(value);
  return static_cast<T>(value);
}

template <class T, bool kLittle>
inline void store_int(std::byte* p, T signed_value) noexcept {
  using U = std::make_unsigned_t<T>;
  auto value = static_cast<U>(signed_value);
  if constexpr (kLittle != (std::endian::native == std::endian::little)) value = byte_swap(value);
  std::memcpy(p, &value, sizeof(U));
}

[[noreturn]] void throw_index_out_of_bounds(std::size_t index, std::size_t length,
                                            std::size_t capacity);
[[noreturn]] void throw_read_out_of_bounds(std::size_t reader_index, std::size_t length,
                                           std::size_t writer_index);

}  // namespace detail

/// Bytes with a reader index and a writer index: 0 <= reader_index <= writer_index <= capacity.
/// Reading consumes [reader_index, writer_index); writing appends at writer_index and grows the
/// capacity (doubling, up to max_capacity). `get_`/`set_` take absolute indexes and move nothing.
///
/// A ByteBuf is a handle: moving it is cheap, copying is explicit (share() for another handle on
/// the same bytes, copy() for new bytes). Storage is freed when its last handle goes away.
///
/// The typed integer accessors (`get_u32`, `set_i64_le`, `read_u16`, `write_u8`, ...) are
/// listed under ByteBufReadAccessors and ByteBufWriteAccessors, which this class derives from.
///
/// Threading: handles to one storage may live on different threads; one handle is used by one
/// thread at a time.
///
/// Errors: an access outside [0, capacity), a read of more than the readable bytes, and growing
/// past max_capacity() throw IndexOutOfBoundsError and leave the indexes unchanged.
class ByteBuf : public ByteBufReadAccessors<ByteBuf>, public ByteBufWriteAccessors<ByteBuf> {
 public:
  /// The largest capacity a ByteBuf can have (indexes are 32-bit).
  static constexpr std::size_t kMaxCapacity = 0x7fffffff;

  /// An empty handle: capacity 0, no storage; reads and writes throw IndexOutOfBoundsError.
  ByteBuf() noexcept = default;
  /// Takes over the other handle's storage and indexes; `other` becomes an empty handle.
  ByteBuf(ByteBuf&& other) noexcept
      : storage_(other.storage_),
        offset_(other.offset_),
        capacity_(other.capacity_),
        max_capacity_(other.max_capacity_),
        reader_(other.reader_),
        writer_(other.writer_) {
    other.reset_fields();
  }
  /// Lets go of this handle's storage, then takes over the other's; `other` becomes empty.
  ByteBuf& operator=(ByteBuf&& other) noexcept {
    if (this != &other) {
      release();
      storage_ = other.storage_;
      offset_ = other.offset_;
      capacity_ = other.capacity_;
      max_capacity_ = other.max_capacity_;
      reader_ = other.reader_;
      writer_ = other.writer_;
      other.reset_fields();
    }
    return *this;
  }
  ByteBuf(const ByteBuf&) = delete;
  ByteBuf& operator=(const ByteBuf&) = delete;
  /// Lets go of the storage (freed when this was its last handle).
  ~ByteBuf() { release(); }

  /// @name Making buffers
  ///@{

  /// A copy of `text` or `bytes` in a new buffer from ByteBufAllocator::default_allocator().
  static ByteBuf from(std::string_view text);
  static ByteBuf from(std::span<const std::byte> bytes);
  ///@}

  /// Another handle on the same storage with the same indexes; writes through either are seen by
  /// both. Growing either one moves that one to new storage and leaves the other untouched.
  ByteBuf share() const;
  /// A handle on bytes [index, index + length) of this one, sharing storage: reader index 0,
  /// writer index and capacity `length`, and a max capacity of `length` too. Throws
  /// IndexOutOfBoundsError when the range is not inside the capacity.
  ByteBuf slice(std::size_t index, std::size_t length) const;
  /// `slice(reader_index(), readable_bytes())`.
  ByteBuf slice() const { return slice(reader_, writer_ - reader_); }
  /// `slice(reader_index(), length)`, then advances the reader index by `length`. Throws
  /// IndexOutOfBoundsError when fewer than `length` bytes are readable.
  ByteBuf read_slice(std::size_t length);
  /// @name Copying bytes
  ///@{

  /// The readable bytes (or [index, index + length)) copied into new storage of the same
  /// allocator. Copying an empty handle gives an empty handle.
  ByteBuf copy() const { return copy(reader_, writer_ - reader_); }
  ByteBuf copy(std::size_t index, std::size_t length) const;
  ///@}

  /// The bytes this handle can hold before it grows.
  std::size_t capacity() const noexcept { return capacity_; }
  /// The capacity this handle may grow to.
  std::size_t max_capacity() const noexcept { return max_capacity_; }
  /// Where the next read starts.
  std::size_t reader_index() const noexcept { return reader_; }
  /// Where the next write starts (the end of the readable bytes).
  std::size_t writer_index() const noexcept { return writer_; }
  /// `writer_index() - reader_index()`.
  std::size_t readable_bytes() const noexcept { return writer_ - reader_; }
  /// `capacity() - writer_index()`: what can be written without growing.
  std::size_t writable_bytes() const noexcept { return capacity_ - writer_; }
  /// True when at least one byte is readable.
  bool is_readable() const noexcept { return writer_ > reader_; }
  /// True when at least one byte can be written without growing.
  bool is_writable() const noexcept { return capacity_ > writer_; }
  /// Handles on this storage (0 for an empty handle); 1 means this handle is the only one.
  std::uint32_t ref_count() const noexcept {
    return storage_ ? storage_->refs.load(std::memory_order_acquire) : 0;
  }

  /// Moves the reader index; throws IndexOutOfBoundsError past the writer index.
  void set_reader_index(std::size_t index);
  /// Moves the writer index; throws IndexOutOfBoundsError outside [reader index, capacity].
  void set_writer_index(std::size_t index) {
    if (index < reader_ || index > capacity_) [[unlikely]]
      throw_writer_index(index);
    writer_ = static_cast<std::uint32_t>(index);
  }
  /// Sets both indexes at once; throws IndexOutOfBoundsError unless
  /// reader_index <= writer_index <= capacity().
  void set_index(std::size_t reader_index, std::size_t writer_index);
  /// Sets both indexes to 0 (the bytes stay).
  void clear() noexcept { reader_ = writer_ = 0; }
  /// Advances the reader index by `length`; throws IndexOutOfBoundsError when fewer bytes are
  /// readable.
  void skip_bytes(std::size_t length) {
    check_readable(length);
    reader_ += static_cast<std::uint32_t>(length);
  }
  /// Makes room for `length` more bytes after the writer index: grows in place when this handle
  /// owns its storage alone and the block has room, else moves to new storage of at least double
  /// the size. Throws IndexOutOfBoundsError past max_capacity().
  void ensure_writable(std::size_t length) {
    if (length > capacity_ - writer_) grow(length);
  }
  /// Drops the bytes before the reader index: moves the readable bytes to index 0 when this handle
  /// is alone on its storage; on shared storage the handle's start moves instead (no copy; the
  /// capacity shrinks by the discarded amount).
  void discard_read_bytes();

  /// @name Raw access
  ///@{

  /// Start of the buffer (index 0, not the reader index); nullptr for an empty handle.
  std::byte* data() noexcept { return storage_ ? raw() : nullptr; }
  const std::byte* data() const noexcept { return storage_ ? raw() : nullptr; }
  ///@}

  /// The readable bytes, [reader index, writer index) (empty for an empty handle).
  std::span<const std::byte> readable_span() const noexcept {
    return storage_ ? std::span<const std::byte>(raw() + reader_, writer_ - reader_)
                    : std::span<const std::byte>();
  }
  /// The writable bytes, [writer index, capacity); write into them, then advance the writer
  /// index with set_writer_index().
  std::span<std::byte> writable_span() noexcept {
    return storage_ ? std::span<std::byte>(raw() + writer_, capacity_ - writer_)
                    : std::span<std::byte>();
  }

  /// Copies bytes from absolute `index` into all of `out`; moves no index. Throws
  /// IndexOutOfBoundsError unless they lie inside the capacity.
  void get_bytes(std::size_t index, std::span<std::byte> out) const;
  /// Copies `in` to absolute `index`; moves no index. Throws IndexOutOfBoundsError unless the
  /// range lies inside the capacity.
  void set_bytes(std::size_t index, std::span<const std::byte> in);
  /// Fills `out` completely from the readable bytes (throws IndexOutOfBoundsError if fewer are
  /// readable).
  void read_bytes(std::span<std::byte> out);
  /// Appends `in` at the writer index, growing like ensure_writable().
  void write_bytes(std::span<const std::byte> in);
  /// Appends the readable bytes of `other` (whose indexes do not move); `other` may be *this.
  void write_bytes(const ByteBuf& other);
  /// Appends the bytes of `text` at the writer index.
  void write_string(std::string_view text) {
    write_bytes(std::as_bytes(std::span<const char>(text.data(), text.size())));
  }
  /// The next `length` readable bytes as a string; advances the reader index past them. Throws
  /// IndexOutOfBoundsError when fewer are readable.
  std::string read_string(std::size_t length);

  /// Index of the first `value` in [from, to) when from <= to, else of the last one in [to, from);
  /// indexes are clamped to the capacity. -1 when absent.
  std::int64_t index_of(std::size_t from, std::size_t to, std::uint8_t value) const;

  /// The readable bytes as a string (indexes do not move).
  std::string to_string() const;
  /// A Netty-style hex dump of the readable bytes (rows labelled with absolute indexes), for logs.
  std::string hex_dump() const;

 private:
  friend class ByteBufAllocator;
  friend class ByteBufReadAccessors<ByteBuf>;
  friend class ByteBufWriteAccessors<ByteBuf>;

  ByteBuf(detail::ByteBufStorage* storage, std::uint32_t offset, std::uint32_t capacity,
          std::uint32_t max_capacity, std::uint32_t reader, std::uint32_t writer) noexcept
      : storage_(storage),
        offset_(offset),
        capacity_(capacity),
        max_capacity_(max_capacity),
        reader_(reader),
        writer_(writer) {}

  [[noreturn]] void throw_writer_index(std::size_t index) const;
  std::byte* raw() const noexcept { return storage_->data() + offset_; }
  void reset_fields() noexcept {
    storage_ = nullptr;
    offset_ = capacity_ = max_capacity_ = reader_ = writer_ = 0;
  }
  void release() noexcept {
    if (storage_ != nullptr) {
      detail::release_storage_ref(storage_);
      storage_ = nullptr;
    }
  }
  void check_index(std::size_t index, std::size_t length) const {
    if (index > capacity_ || length > capacity_ - index) {
      detail::throw_index_out_of_bounds(index, length, capacity_);
    }
  }
  void check_readable(std::size_t length) const {
    if (length > static_cast<std::size_t>(writer_ - reader_)) {
      detail::throw_read_out_of_bounds(reader_, length, writer_);
    }
  }
  void grow(std::size_t length);

  template <class T, bool kLittle>
  T get(std::size_t index) const {
    check_index(index, sizeof(T));
    return detail::load_int<T, kLittle>(raw() + index);
  }
  template <class T, bool kLittle>
  void set(std::size_t index, T value) {
    check_index(index, sizeof(T));
    detail::store_int<T, kLittle>(raw() + index, value);
  }
  template <class T, bool kLittle>
  T read() {
    check_readable(sizeof(T));
    T value = detail::load_int<T, kLittle>(raw() + reader_);
    reader_ += sizeof(T);
    return value;
  }
  template <class T, bool kLittle>
  void write(T value) {
    ensure_writable(sizeof(T));
    detail::store_int<T, kLittle>(raw() + writer_, value);
    writer_ += sizeof(T);
  }

  detail::ByteBufStorage* storage_ = nullptr;
  std::uint32_t offset_ = 0;  // where index 0 of this handle sits in the storage's data
  std::uint32_t capacity_ = 0;
  std::uint32_t max_capacity_ = 0;
  std::uint32_t reader_ = 0;
  std::uint32_t writer_ = 0;
};

// Stored inline in the small buffer of a Message: keep the handle this small.
static_assert(sizeof(ByteBuf) <= 32);

}  // namespace trellis
