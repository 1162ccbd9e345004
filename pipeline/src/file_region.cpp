// A reference-counted file region (see file_region.hpp).
#include <trellis/pipeline/file_region.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include <trellis/pipeline/error.hpp>

namespace trellis {

FileRegion::FileRegion(int fd, std::uint64_t position, std::uint64_t count)
    : position_(position), count_(count) {
  if (fd < 0) throw InvalidArgumentError("FileRegion: invalid file descriptor");
  try {
    shared_ = new Shared{{1}, fd};
  } catch (...) {
    ::close(fd);
    throw;
  }
}

FileRegion FileRegion::open(const std::filesystem::path& path, std::uint64_t position,
                            std::optional<std::uint64_t> count) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    throw IoError(std::error_code(errno, std::system_category()),
                  "FileRegion: open " + path.string());
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::error_code error(errno, std::system_category());
    ::close(fd);
    throw IoError(error, "FileRegion: fstat " + path.string());
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InvalidArgumentError("FileRegion: not a regular file: " + path.string());
  }
  if (!count) {
    const auto size = static_cast<std::uint64_t>(st.st_size);
    count = size > position ? size - position : 0;
  }
  return FileRegion(fd, position, *count);
}

FileRegion& FileRegion::operator=(FileRegion&& other) noexcept {
  if (this != &other) {
    release();
    shared_ = std::exchange(other.shared_, nullptr);
    position_ = std::exchange(other.position_, 0);
    count_ = std::exchange(other.count_, 0);
    transferred_ = std::exchange(other.transferred_, 0);
  }
  return *this;
}

FileRegion FileRegion::share(std::uint64_t position, std::uint64_t count) const {
  if (shared_ == nullptr) throw IllegalStateError("FileRegion: share() of an empty region");
  shared_->refs.fetch_add(1, std::memory_order_relaxed);
  FileRegion region;
  region.shared_ = shared_;
  region.position_ = position;
  region.count_ = count;
  return region;
}

int FileRegion::fd() const noexcept { return shared_ != nullptr ? shared_->fd : -1; }

void FileRegion::add_transferred(std::uint64_t n) {
  if (n > remaining()) {
    throw InvalidArgumentError("FileRegion: " + std::to_string(n) + " bytes transferred, only " +
                               std::to_string(remaining()) + " remained");
  }
  transferred_ += n;
}

std::uint32_t FileRegion::ref_count() const noexcept {
  return shared_ != nullptr ? shared_->refs.load(std::memory_order_relaxed) : 0;
}

void FileRegion::release() noexcept {
  Shared* shared = std::exchange(shared_, nullptr);
  if (shared == nullptr) return;
  if (shared->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    ::close(shared->fd);  // a read-only descriptor: close() loses no data
    delete shared;
  }
}

}  // namespace trellis
