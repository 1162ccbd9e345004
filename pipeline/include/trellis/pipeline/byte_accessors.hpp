// ByteBufReadAccessors / ByteBufWriteAccessors: the typed integer accessors (u8 to i64, big- and
// little-endian) that ByteBuf and CompositeByteBuf share, written once on top of each class's
// private get/read (and set/write) templates. CRTP: every call inlines to the class's own code.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trellis {

/// The integer getters and readers of ByteBuf and CompositeByteBuf: `get_*` at an absolute
/// index, `read_*` at the reader index; big-endian unless the name ends in `_le`.
///
/// A base of those classes only (CRTP): `Derived` provides the private templates
/// `get<T, kLittle>(index)` and `read<T, kLittle>()`, which every accessor here calls inline.
///
/// Errors: an integer whose bytes are not inside the buffer (ByteBuf: its capacity;
/// CompositeByteBuf: below its writer index), or a read of more than the readable bytes, throws
/// IndexOutOfBoundsError and moves no index.
template <class Derived>
class ByteBufReadAccessors {
 public:
  /// @name Getting integers
  /// The integer at absolute `index` (big-endian unless `_le`); moves no index.
  ///@{

  /// The u8 at `index`.
  std::uint8_t get_u8(std::size_t index) const { return get_int<std::uint8_t, false>(index); }
  /// The i8 at `index`.
  std::int8_t get_i8(std::size_t index) const { return get_int<std::int8_t, false>(index); }
  /// The big-endian u16 at `index`.
  std::uint16_t get_u16(std::size_t index) const { return get_int<std::uint16_t, false>(index); }
  /// The big-endian i16 at `index`.
  std::int16_t get_i16(std::size_t index) const { return get_int<std::int16_t, false>(index); }
  /// The big-endian u32 at `index`.
  std::uint32_t get_u32(std::size_t index) const { return get_int<std::uint32_t, false>(index); }
  /// The big-endian i32 at `index`.
  std::int32_t get_i32(std::size_t index) const { return get_int<std::int32_t, false>(index); }
  /// The big-endian u64 at `index`.
  std::uint64_t get_u64(std::size_t index) const { return get_int<std::uint64_t, false>(index); }
  /// The big-endian i64 at `index`.
  std::int64_t get_i64(std::size_t index) const { return get_int<std::int64_t, false>(index); }
  /// The little-endian u16 at `index`.
  std::uint16_t get_u16_le(std::size_t index) const { return get_int<std::uint16_t, true>(index); }
  /// The little-endian i16 at `index`.
  std::int16_t get_i16_le(std::size_t index) const { return get_int<std::int16_t, true>(index); }
  /// The little-endian u32 at `index`.
  std::uint32_t get_u32_le(std::size_t index) const { return get_int<std::uint32_t, true>(index); }
  /// The little-endian i32 at `index`.
  std::int32_t get_i32_le(std::size_t index) const { return get_int<std::int32_t, true>(index); }
  /// The little-endian u64 at `index`.
  std::uint64_t get_u64_le(std::size_t index) const { return get_int<std::uint64_t, true>(index); }
  /// The little-endian i64 at `index`.
  std::int64_t get_i64_le(std::size_t index) const { return get_int<std::int64_t, true>(index); }
  ///@}

  /// @name Reading integers
  /// Reads the integer at the reader index (big-endian unless `_le`) and advances the reader
  /// index past it.
  ///@{

  /// Reads a u8.
  std::uint8_t read_u8() { return read_int<std::uint8_t, false>(); }
  /// Reads an i8.
  std::int8_t read_i8() { return read_int<std::int8_t, false>(); }
  /// Reads a big-endian u16.
  std::uint16_t read_u16() { return read_int<std::uint16_t, false>(); }
  /// Reads a big-endian i16.
  std::int16_t read_i16() { return read_int<std::int16_t, false>(); }
  /// Reads a big-endian u32.
  std::uint32_t read_u32() { return read_int<std::uint32_t, false>(); }
  /// Reads a big-endian i32.
  std::int32_t read_i32() { return read_int<std::int32_t, false>(); }
  /// Reads a big-endian u64.
  std::uint64_t read_u64() { return read_int<std::uint64_t, false>(); }
  /// Reads a big-endian i64.
  std::int64_t read_i64() { return read_int<std::int64_t, false>(); }
  /// Reads a little-endian u16.
  std::uint16_t read_u16_le() { return read_int<std::uint16_t, true>(); }
  /// Reads a little-endian i16.
  std::int16_t read_i16_le() { return read_int<std::int16_t, true>(); }
  /// Reads a little-endian u32.
  std::uint32_t read_u32_le() { return read_int<std::uint32_t, true>(); }
  /// Reads a little-endian i32.
  std::int32_t read_i32_le() { return read_int<std::int32_t, true>(); }
  /// Reads a little-endian u64.
  std::uint64_t read_u64_le() { return read_int<std::uint64_t, true>(); }
  /// Reads a little-endian i64.
  std::int64_t read_i64_le() { return read_int<std::int64_t, true>(); }
  ///@}

 protected:
  /// Internal: only the buffer classes are built on it.
  ByteBufReadAccessors() = default;

 private:
  template <class T, bool kLittle>
  T get_int(std::size_t index) const {
    return static_cast<const Derived&>(*this).template get<T, kLittle>(index);
  }
  template <class T, bool kLittle>
  T read_int() {
    return static_cast<Derived&>(*this).template read<T, kLittle>();
  }
};

/// The integer setters and writers of ByteBuf: `set_*` at an absolute index, `write_*` appended
/// at the writer index; big-endian unless the name ends in `_le`.
///
/// A base of ByteBuf only (CRTP): `Derived` provides the private templates
/// `set<T, kLittle>(index, value)` and `write<T, kLittle>(value)`, which every accessor here
/// calls inline.
///
/// Errors: set_* of an integer whose bytes are not inside the capacity, and write_* past the max
/// capacity, throw IndexOutOfBoundsError and move no index.
template <class Derived>
class ByteBufWriteAccessors {
 public:
  /// @name Setting integers
  /// Stores `v` at absolute `index` (big-endian unless `_le`); moves no index.
  ///@{

  /// Stores `v` as a u8 at `index`.
  void set_u8(std::size_t index, std::uint8_t v) { set_int<std::uint8_t, false>(index, v); }
  /// Stores `v` as an i8 at `index`.
  void set_i8(std::size_t index, std::int8_t v) { set_int<std::int8_t, false>(index, v); }
  /// Stores `v` as a big-endian u16 at `index`.
  void set_u16(std::size_t index, std::uint16_t v) { set_int<std::uint16_t, false>(index, v); }
  /// Stores `v` as a big-endian i16 at `index`.
  void set_i16(std::size_t index, std::int16_t v) { set_int<std::int16_t, false>(index, v); }
  /// Stores `v` as a big-endian u32 at `index`.
  void set_u32(std::size_t index, std::uint32_t v) { set_int<std::uint32_t, false>(index, v); }
  /// Stores `v` as a big-endian i32 at `index`.
  void set_i32(std::size_t index, std::int32_t v) { set_int<std::int32_t, false>(index, v); }
  /// Stores `v` as a big-endian u64 at `index`.
  void set_u64(std::size_t index, std::uint64_t v) { set_int<std::uint64_t, false>(index, v); }
  /// Stores `v` as a big-endian i64 at `index`.
  void set_i64(std::size_t index, std::int64_t v) { set_int<std::int64_t, false>(index, v); }
  /// Stores `v` as a little-endian u16 at `index`.
  void set_u16_le(std::size_t index, std::uint16_t v) { set_int<std::uint16_t, true>(index, v); }
  /// Stores `v` as a little-endian i16 at `index`.
  void set_i16_le(std::size_t index, std::int16_t v) { set_int<std::int16_t, true>(index, v); }
  /// Stores `v` as a little-endian u32 at `index`.
  void set_u32_le(std::size_t index, std::uint32_t v) { set_int<std::uint32_t, true>(index, v); }
  /// Stores `v` as a little-endian i32 at `index`.
  void set_i32_le(std::size_t index, std::int32_t v) { set_int<std::int32_t, true>(index, v); }
  /// Stores `v` as a little-endian u64 at `index`.
  void set_u64_le(std::size_t index, std::uint64_t v) { set_int<std::uint64_t, true>(index, v); }
  /// Stores `v` as a little-endian i64 at `index`.
  void set_i64_le(std::size_t index, std::int64_t v) { set_int<std::int64_t, true>(index, v); }
  ///@}

  /// @name Writing integers
  /// Appends `v` at the writer index (big-endian unless `_le`), growing the buffer when needed
  /// (ByteBuf::ensure_writable()), and advances the writer index past it.
  ///@{

  /// Appends `v` as a u8.
  void write_u8(std::uint8_t v) { write_int<std::uint8_t, false>(v); }
  /// Appends `v` as an i8.
  void write_i8(std::int8_t v) { write_int<std::int8_t, false>(v); }
  /// Appends `v` as a big-endian u16.
  void write_u16(std::uint16_t v) { write_int<std::uint16_t, false>(v); }
  /// Appends `v` as a big-endian i16.
  void write_i16(std::int16_t v) { write_int<std::int16_t, false>(v); }
  /// Appends `v` as a big-endian u32.
  void write_u32(std::uint32_t v) { write_int<std::uint32_t, false>(v); }
  /// Appends `v` as a big-endian i32.
  void write_i32(std::int32_t v) { write_int<std::int32_t, false>(v); }
  /// Appends `v` as a big-endian u64.
  void write_u64(std::uint64_t v) { write_int<std::uint64_t, false>(v); }
  /// Appends `v` as a big-endian i64.
  void write_i64(std::int64_t v) { write_int<std::int64_t, false>(v); }
  /// Appends `v` as a little-endian u16.
  void write_u16_le(std::uint16_t v) { write_int<std::uint16_t, true>(v); }
  /// Appends `v` as a little-endian i16.
  void write_i16_le(std::int16_t v) { write_int<std::int16_t, true>(v); }
  /// Appends `v` as a little-endian u32.
  void write_u32_le(std::uint32_t v) { write_int<std::uint32_t, true>(v); }
  /// Appends `v` as a little-endian i32.
  void write_i32_le(std::int32_t v) { write_int<std::int32_t, true>(v); }
  /// Appends `v` as a little-endian u64.
  void write_u64_le(std::uint64_t v) { write_int<std::uint64_t, true>(v); }
  /// Appends `v` as a little-endian i64.
  void write_i64_le(std::int64_t v) { write_int<std::int64_t, true>(v); }
  ///@}

 protected:
  /// Internal: only ByteBuf is built on it.
  ByteBufWriteAccessors() = default;

 private:
  template <class T, bool kLittle>
  void set_int(std::size_t index, T value) {
    static_cast<Derived&>(*this).template set<T, kLittle>(index, value);
  }
  template <class T, bool kLittle>
  void write_int(T value) {
    static_cast<Derived&>(*this).template write<T, kLittle>(value);
  }
};

}  // namespace trellis
