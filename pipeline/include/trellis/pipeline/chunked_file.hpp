// ChunkedFile: a ChunkedInput over a region of a file, read with pread(2) one chunk at a time
// (Netty's ChunkedFile). Failures are IoError carrying the std::error_code of errno.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

#include <trellis/pipeline/chunked_input.hpp>
#include <trellis/pipeline/file_region.hpp>

namespace trellis {

/// A ChunkedInput over a region of a file, read with pread(2) one chunk at a time.
///
/// Reads [offset, offset + length) of the file. pread takes the offset with each call, so the
/// file position is never moved and the descriptor may be shared. The reads block the event loop
/// for as long as the disk takes: fine for files in the page cache, use a ChunkedStream over a
/// reader fed by blocking() for slow storage. A file shorter than the region makes read_chunk()
/// throw IoError (std::errc::io_error) when it reaches the end early.
class ChunkedFile final : public ChunkedInput {
 public:
  /// @name Opening a file
  ///@{

  /// Opens `path` read-only: the whole file, or [offset, offset + length) of it (length -1: up to
  /// its current size). Throws IoError when the file cannot be opened or stat'ed.
  explicit ChunkedFile(const std::filesystem::path& path,
                       std::size_t chunk_size = kDefaultChunkSize);
  ChunkedFile(const std::filesystem::path& path, std::int64_t offset, std::int64_t length,
              std::size_t chunk_size = kDefaultChunkSize);
  ///@}

  /// Takes ownership of `fd` (closed by close()): [offset, offset + length) of its file (length
  /// -1: up to the file's current size).
  ChunkedFile(int fd, std::int64_t offset, std::int64_t length,
              std::size_t chunk_size = kDefaultChunkSize);
  /// The part of region not transferred yet, read from a duplicate of its descriptor (the
  /// region keeps its own): the read-based path for a FileRegion on a channel that cannot
  /// sendfile. Throws IoError when the descriptor cannot be duplicated, IllegalStateError for
  /// an empty region.
  explicit ChunkedFile(const FileRegion& region, std::size_t chunk_size = kDefaultChunkSize);
  /// Closes the descriptor.
  ~ChunkedFile() override { close(); }

  /// True once the region was read, or after close().
  bool is_end_of_input() override { return offset_ >= end_offset_ || fd_ < 0; }
  /// The next chunk of at most the chunk size. Throws IoError on a failed pread or an early end of
  /// file, IllegalStateError after close().
  ByteBuf read_chunk(ByteBufAllocator& alloc) override;
  /// Closes the descriptor.
  void close() override;
  /// The region's length.
  std::int64_t length() override { return end_offset_ - start_offset_; }
  /// The bytes read so far.
  std::int64_t progress() override { return offset_ - start_offset_; }

  /// True after close().
  bool is_closed() const noexcept { return fd_ < 0; }
  /// Where the region starts in the file.
  std::int64_t start_offset() const noexcept { return start_offset_; }
  /// Where the region ends in the file (exclusive).
  std::int64_t end_offset() const noexcept { return end_offset_; }
  /// Where the next chunk starts in the file.
  std::int64_t current_offset() const noexcept { return offset_; }

 private:
  void init(std::int64_t offset, std::int64_t length);

  int fd_;
  std::size_t chunk_size_;
  std::int64_t start_offset_ = 0;
  std::int64_t offset_ = 0;
  std::int64_t end_offset_ = 0;
};

}  // namespace trellis
