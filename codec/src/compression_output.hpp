// Helpers shared by the compression engines (private to the codec library).
#pragma once

#include <algorithm>
#include <cstddef>

#include <trellis/pipeline/byte_buf.hpp>

namespace trellis::codec::detail {

// Makes room for at least `want` more bytes in out (at least 64, so that a flush marker always
// fits) and returns the writable span.
inline std::span<std::byte> output_room(ByteBuf& out, std::size_t want) {
  out.ensure_writable(std::max<std::size_t>(want, 64));
  return out.writable_span();
}

// Commits `n` bytes written into the span output_room returned.
inline void commit_output(ByteBuf& out, std::size_t n) {
  out.set_writer_index(out.writer_index() + n);
}

}  // namespace trellis::codec::detail
