// Chunks of a file region read with pread (see chunked_file.hpp).
#include <trellis/pipeline/chunked_file.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <system_error>

#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/error.hpp>

namespace trellis {

namespace {

std::error_code last_error() noexcept { return {errno, std::system_category()}; }

int open_read_only(const std::filesystem::path& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw IoError(last_error(), "ChunkedFile: open " + path.string());
  return fd;
}

int duplicate(const FileRegion& region) {
  if (region.fd() < 0) throw IllegalStateError("ChunkedFile: an empty FileRegion");
  const int fd = ::fcntl(region.fd(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) throw IoError(last_error(), "ChunkedFile: duplicate the FileRegion's descriptor");
  return fd;
}

}  // namespace

ChunkedFile::ChunkedFile(const FileRegion& region, std::size_t chunk_size)
    : fd_(duplicate(region)), chunk_size_(chunk_size) {
  init(static_cast<std::int64_t>(region.transfer_position()),
       static_cast<std::int64_t>(region.remaining()));
}

ChunkedFile::ChunkedFile(const std::filesystem::path& path, std::size_t chunk_size)
    : ChunkedFile(path, 0, -1, chunk_size) {}

ChunkedFile::ChunkedFile(const std::filesystem::path& path, std::int64_t offset,
                         std::int64_t length, std::size_t chunk_size)
    : fd_(open_read_only(path)), chunk_size_(chunk_size) {
  init(offset, length);
}

ChunkedFile::ChunkedFile(int fd, std::int64_t offset, std::int64_t length, std::size_t chunk_size)
    : fd_(fd), chunk_size_(chunk_size) {
  init(offset, length);
}

void ChunkedFile::init(std::int64_t offset, std::int64_t length) {
  // The destructor does not run when a constructor throws: close the descriptor here.
  try {
    if (fd_ < 0) throw InvalidArgumentError("ChunkedFile: invalid file descriptor");
    if (chunk_size_ == 0 || chunk_size_ > ByteBuf::kMaxCapacity) {
      throw InvalidArgumentError("ChunkedFile: chunk size out of range");
    }
    if (offset < 0) throw InvalidArgumentError("ChunkedFile: negative offset");
    if (length < 0) {
      struct stat st {};
      if (::fstat(fd_, &st) != 0) throw IoError(last_error(), "ChunkedFile: fstat");
      length = st.st_size > offset ? static_cast<std::int64_t>(st.st_size) - offset : 0;
    }
    start_offset_ = offset;
    offset_ = offset;
    end_offset_ = offset + length;
  } catch (...) {
    close();
    throw;
  }
}

ByteBuf ChunkedFile::read_chunk(ByteBufAllocator& alloc) {
  if (fd_ < 0) throw IllegalStateError("ChunkedFile: read after close");
  if (offset_ >= end_offset_) return ByteBuf();
  const auto want = static_cast<std::size_t>(
      std::min<std::int64_t>(end_offset_ - offset_, static_cast<std::int64_t>(chunk_size_)));
  ByteBuf chunk = alloc.buffer(want, want);
  std::size_t filled = 0;
  while (filled < want) {
    const ssize_t n = ::pread(fd_, chunk.data() + filled, want - filled,
                              static_cast<off_t>(offset_) + static_cast<off_t>(filled));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(last_error(), "ChunkedFile: pread");
    }
    if (n == 0) {
      throw IoError(std::make_error_code(std::errc::io_error),
                    "ChunkedFile: the file ended at offset " +
                        std::to_string(offset_ + static_cast<std::int64_t>(filled)) +
                        ", before the end of its region");
    }
    filled += static_cast<std::size_t>(n);
  }
  chunk.set_writer_index(filled);
  offset_ += static_cast<std::int64_t>(filled);
  return chunk;
}

void ChunkedFile::close() {
  if (fd_ < 0) return;
  ::close(fd_);  // errors of close() on a read-only descriptor lose no data
  fd_ = -1;
}

}  // namespace trellis
