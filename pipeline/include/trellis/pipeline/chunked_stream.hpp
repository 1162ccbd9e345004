// ChunkedStream: a ChunkedInput over a reader function (a pipe, a generator, a decompressor...)
// that fills a span and returns how many bytes it wrote, 0 at the end (Netty's ChunkedStream).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include <trellis/pipeline/chunked_input.hpp>

namespace trellis {

/// A ChunkedInput over a reader function (a pipe, a generator, a decompressor...) that fills a
/// span and returns how many bytes it wrote, 0 at the end.
///
/// Each read_chunk() calls the reader until a chunk of chunk_size bytes is full or the reader
/// returns 0, so a reader that returns short counts still makes full chunks. The reader runs on
/// the event loop: it must not block for long (wrap slow sources so they return what they have).
/// A ChunkedStream never suspends: it has data until the reader says it has ended.
class ChunkedStream final : public ChunkedInput {
 public:
  /// Fills the span it is given (partly or wholly) and returns how many bytes it wrote; 0 means
  /// the end of the stream.
  using Reader = std::function<std::size_t(std::span<std::byte>)>;

  /// Reads from `reader` in chunks of `chunk_size`. `length`: the total the reader will produce if
  /// known (only reported by length()), else -1.
  explicit ChunkedStream(Reader reader, std::size_t chunk_size = kDefaultChunkSize,
                         std::int64_t length = -1);
  /// Drops the reader.
  ~ChunkedStream() override { close(); }

  /// True once the reader returned 0, or after close().
  bool is_end_of_input() override { return end_ || closed_; }
  /// The next chunk: full unless the reader ended. Throws IllegalStateError after close(); whatever
  /// the reader throws propagates.
  ByteBuf read_chunk(ByteBufAllocator& alloc) override;
  /// Drops the reader (and what it captured).
  void close() override;
  /// The length given to the constructor (-1 when unknown).
  std::int64_t length() override { return length_; }
  /// The bytes read so far.
  std::int64_t progress() override { return progress_; }

  /// True after close().
  bool is_closed() const noexcept { return closed_; }
  /// The size of a full chunk.
  std::size_t chunk_size() const noexcept { return chunk_size_; }

 private:
  Reader reader_;
  std::size_t chunk_size_;
  std::int64_t length_;
  std::int64_t progress_ = 0;
  bool end_ = false;
  bool closed_ = false;
};

}  // namespace trellis
