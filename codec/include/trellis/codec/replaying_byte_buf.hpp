// ReplayingByteBuf: the view of the received bytes a ReplayingDecoder's decode reads from. A read
// past the end of what has arrived abandons the decode attempt, which is replayed from the last
// checkpoint once more bytes are in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include <trellis/pipeline/byte_buf.hpp>

namespace trellis::detail {
// Thrown by a ReplayingByteBuf read that needs bytes not received yet; ReplayingDecoder catches
// it. Not an std::exception, so a decoder's catch (const std::exception&) does not swallow it.
struct ReplaySignal {};
[[noreturn]] void throw_replay();
}  // namespace trellis::detail

namespace trellis::codec {

/// The received bytes as ReplayingDecoder::decode_replaying sees them: reads as on a ByteBuf, but
/// one that needs more bytes than have arrived abandons the decode attempt (the decoder rewinds
/// to its last checkpoint and calls decode_replaying again when more bytes arrive), so the decoder
/// is written as if the whole message were there. The check is a compare and a predictable
/// branch per read; the abandonment is a C++ exception of a private type that must not be caught
/// by the decoder (a `catch (...)` around reads must rethrow).
///
/// Valid only during the decode_replaying call it is passed to.
class ReplayingByteBuf {
 public:
  /// A view reading from `buf`.
  explicit ReplayingByteBuf(ByteBuf& buf) noexcept : buf_(&buf) {}

  /// The bytes received and not read yet (the real count: a decoder may branch on it).
  std::size_t actual_readable_bytes() const noexcept { return buf_->readable_bytes(); }
  /// The reader index of the underlying buffer.
  std::size_t reader_index() const noexcept { return buf_->reader_index(); }
  /// The underlying buffer, for peeking (get_*, readable_span()); reads on it are not replayed.
  const ByteBuf& buffer() const noexcept { return *buf_; }

  /// @name Reads
  /// As ByteBuf's; each abandons the attempt when fewer bytes than it needs have arrived.
  ///@{
  /// Reads one byte.
  std::uint8_t read_u8() { return need(1).read_u8(); }
  /// Reads a signed byte.
  std::int8_t read_i8() { return need(1).read_i8(); }
  /// Reads a big-endian 16-bit unsigned integer.
  std::uint16_t read_u16() { return need(2).read_u16(); }
  /// Reads a big-endian 16-bit signed integer.
  std::int16_t read_i16() { return need(2).read_i16(); }
  /// Reads a big-endian 32-bit unsigned integer.
  std::uint32_t read_u32() { return need(4).read_u32(); }
  /// Reads a big-endian 32-bit signed integer.
  std::int32_t read_i32() { return need(4).read_i32(); }
  /// Reads a big-endian 64-bit unsigned integer.
  std::uint64_t read_u64() { return need(8).read_u64(); }
  /// Reads a big-endian 64-bit signed integer.
  std::int64_t read_i64() { return need(8).read_i64(); }
  /// Reads a little-endian 16-bit unsigned integer.
  std::uint16_t read_u16_le() { return need(2).read_u16_le(); }
  /// Reads a little-endian 32-bit unsigned integer.
  std::uint32_t read_u32_le() { return need(4).read_u32_le(); }
  /// Reads a little-endian 64-bit unsigned integer.
  std::uint64_t read_u64_le() { return need(8).read_u64_le(); }
  /// The next `length` bytes as a slice sharing the buffer's storage (no copy).
  ByteBuf read_slice(std::size_t length) { return need(length).read_slice(length); }
  /// Copies the next `out.size()` bytes into `out`.
  void read_bytes(std::span<std::byte> out) { need(out.size()).read_bytes(out); }
  /// The next `length` bytes as a string.
  std::string read_string(std::size_t length);
  /// Skips `length` bytes.
  void skip_bytes(std::size_t length) { need(length).skip_bytes(length); }
  /// How many bytes come before the next `value` (the decoder of a delimited format waits for the
  /// delimiter this way).
  std::size_t bytes_before(std::uint8_t value) const;
  ///@}

 private:
  ByteBuf& need(std::size_t n) const {
    if (buf_->readable_bytes() < n) [[unlikely]]
      trellis::detail::throw_replay();
    return *buf_;
  }

  ByteBuf* buf_;
};

}  // namespace trellis::codec
