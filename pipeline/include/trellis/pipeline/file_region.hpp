// FileRegion: a region of a file (descriptor, position, count) written to a channel as it is,
// without passing through user-space buffers: SocketChannel sends it with sendfile(2), a
// ChunkedWriteHandler turns it into pread chunks for channels that cannot, and EmbeddedChannel
// shows it as an outbound message. Netty's DefaultFileRegion.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <type_traits>
#include <utility>

#include <trellis/pipeline/message.hpp>

namespace trellis {

/// A region of a file (descriptor, position, count) written to a channel as it is, without
/// passing through user-space buffers: SocketChannel sends it with sendfile(2), a
/// ChunkedWriteHandler turns it into pread chunks for channels that cannot.
///
/// The descriptor is reference-counted: a region owns one reference, share() makes another
/// region over the same descriptor, and the descriptor is closed when the last region holding
/// it is destroyed (on whatever thread that is). So a server may open a file once and send
/// several ranges of it, and nobody has to know when the transport is done with it.
///
/// Progress: transferred() counts the bytes written so far; the transport advances it
/// (add_transferred) as sendfile returns, and a partial write resumes at position() +
/// transferred(). The outbound buffer counts a region for its remaining() bytes against the
/// water marks, and gives them back as they are written.
///
/// Move-only; a moved-from region is empty (no descriptor, count 0). Not thread-safe itself (it
/// travels with its message); the reference count is atomic.
class FileRegion {
 public:
  /// An empty region: no descriptor, count 0.
  FileRegion() noexcept = default;
  /// Takes ownership of fd: [position, position + count) of the file. Throws
  /// InvalidArgumentError (and closes fd) for a negative descriptor.
  FileRegion(int fd, std::uint64_t position, std::uint64_t count);
  /// Opens path read-only: [position, position + count), or up to the file's current size when
  /// count is not given (0 when position is past the end). Throws IoError when the file cannot
  /// be opened or stat'ed, InvalidArgumentError when it is not a regular file.
  static FileRegion open(const std::filesystem::path& path, std::uint64_t position = 0,
                         std::optional<std::uint64_t> count = std::nullopt);

  /// Takes over the other region (its descriptor reference and progress); `other` becomes empty.
  FileRegion(FileRegion&& other) noexcept
      : shared_(std::exchange(other.shared_, nullptr)),
        position_(std::exchange(other.position_, 0)),
        count_(std::exchange(other.count_, 0)),
        transferred_(std::exchange(other.transferred_, 0)) {}
  /// Lets go of this region's descriptor, then takes over the other's; `other` becomes empty.
  FileRegion& operator=(FileRegion&& other) noexcept;
  FileRegion(const FileRegion&) = delete;
  FileRegion& operator=(const FileRegion&) = delete;
  /// Lets go of the descriptor (closed when this was its last region).
  ~FileRegion() { release(); }

  /// Another region of the same descriptor (shared, not duplicated), nothing transferred yet.
  /// Throws IllegalStateError on an empty region.
  FileRegion share(std::uint64_t position, std::uint64_t count) const;

  /// The descriptor (-1 when empty). Use pread/sendfile with explicit offsets: the file
  /// position is shared by every region of the descriptor and is never relied upon.
  int fd() const noexcept;
  /// Where the region starts in the file.
  std::uint64_t position() const noexcept { return position_; }
  /// The region's length in bytes.
  std::uint64_t count() const noexcept { return count_; }
  /// The bytes written so far.
  std::uint64_t transferred() const noexcept { return transferred_; }
  /// `count() - transferred()`.
  std::uint64_t remaining() const noexcept { return count_ - transferred_; }
  /// Where the next byte comes from in the file.
  std::uint64_t transfer_position() const noexcept { return position_ + transferred_; }
  /// True once every byte was transferred.
  bool is_done() const noexcept { return transferred_ == count_; }
  /// Records n more bytes written; throws InvalidArgumentError when n > remaining().
  void add_transferred(std::uint64_t n);

  /// How many regions hold the descriptor (0 when empty), for tests.
  std::uint32_t ref_count() const noexcept;

 private:
  struct Shared {
    std::atomic<std::uint32_t> refs;
    int fd;
  };
  void release() noexcept;

  Shared* shared_ = nullptr;
  std::uint64_t position_ = 0;
  std::uint64_t count_ = 0;
  std::uint64_t transferred_ = 0;
};

// A FileRegion is a pointer and counters: it moves with memcpy inside a Message.
template <>
struct is_trivially_relocatable<FileRegion> : std::true_type {};

static_assert(Message::stored_inline<FileRegion>(), "a FileRegion must travel without allocating");

}  // namespace trellis
