// ChunkedInput: a source of bytes that ChunkedWriteHandler writes one chunk at a time, only as fast
// as the channel drains (Netty's ChunkedInput<ByteBuf>). ChunkedFile and ChunkedStream implement
// it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <trellis/pipeline/byte_buf.hpp>

namespace trellis {

class ByteBufAllocator;

/// A source of bytes that ChunkedWriteHandler writes one chunk at a time, only as fast as the
/// channel drains. ChunkedFile and ChunkedStream implement it.
///
/// Threading: used on the channel's event loop only. read_chunk() returns the next chunk; a ByteBuf
/// with no readable bytes means "nothing right now": if is_end_of_input() is false the handler
/// suspends the transfer until ChunkedWriteHandler::resume_transfer() is called, and if it is true
/// the input is over. Errors are thrown (IoError for I/O failures); the handler then closes the
/// input and fails the write's promise with the exception.
class ChunkedInput {
 public:
  /// The chunk size of ChunkedFile and ChunkedStream unless told otherwise (Netty's).
  static constexpr std::size_t kDefaultChunkSize = 8192;

  ChunkedInput() = default;
  ChunkedInput(const ChunkedInput&) = delete;
  ChunkedInput& operator=(const ChunkedInput&) = delete;
  /// Destroys the input (subclasses close() what they hold).
  virtual ~ChunkedInput() = default;

  /// True once every byte was returned by read_chunk() (or the input was closed).
  virtual bool is_end_of_input() = 0;
  /// The next chunk, allocated from `alloc`; empty when no data is available now (see the class).
  virtual ByteBuf read_chunk(ByteBufAllocator& alloc) = 0;
  /// Releases what the input holds (a file descriptor, a reader). Idempotent; the handler calls it
  /// when the transfer ended, successfully or not.
  virtual void close() = 0;
  /// Total bytes the input will produce, or -1 when unknown.
  virtual std::int64_t length() = 0;
  /// Bytes produced so far.
  virtual std::int64_t progress() = 0;
};

/// The message type ChunkedWriteHandler recognises: write `ChunkedInputPtr(input)`. (A message
/// holding `std::shared_ptr<ChunkedFile>` or `std::shared_ptr<ChunkedStream>` is recognised too;
/// one holding a `shared_ptr` to another subclass is not, since messages are typed without RTTI.)
using ChunkedInputPtr = std::shared_ptr<ChunkedInput>;

}  // namespace trellis
