// Chunks from a reader function (see chunked_stream.hpp).
#include <trellis/pipeline/chunked_stream.hpp>

#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/error.hpp>

namespace trellis {

ChunkedStream::ChunkedStream(Reader reader, std::size_t chunk_size, std::int64_t length)
    : reader_(std::move(reader)), chunk_size_(chunk_size), length_(length) {
  if (!reader_) throw InvalidArgumentError("ChunkedStream: no reader");
  if (chunk_size_ == 0 || chunk_size_ > ByteBuf::kMaxCapacity) {
    throw InvalidArgumentError("ChunkedStream: chunk size out of range");
  }
}

ByteBuf ChunkedStream::read_chunk(ByteBufAllocator& alloc) {
  if (closed_) throw IllegalStateError("ChunkedStream: read after close");
  if (end_) return ByteBuf();
  ByteBuf chunk = alloc.buffer(chunk_size_, chunk_size_);
  std::size_t filled = 0;
  while (filled < chunk_size_) {
    const std::size_t n = reader_(chunk.writable_span().first(chunk_size_ - filled));
    if (n == 0) {
      end_ = true;
      break;
    }
    if (n > chunk_size_ - filled) throw InvalidArgumentError("ChunkedStream: reader overran");
    filled += n;
    chunk.set_writer_index(filled);
  }
  progress_ += static_cast<std::int64_t>(filled);
  if (filled == 0) return ByteBuf();
  return chunk;
}

void ChunkedStream::close() {
  if (closed_) return;
  closed_ = true;
  reader_ = nullptr;
}

}  // namespace trellis
