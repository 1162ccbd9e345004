// AsyncChannelOptions and AsyncWriteCompletion: how an AsyncChannel buffers inbound messages for
// its reader and when an awaited write goes on.
#pragma once

#include <cstddef>

namespace trellis {

/// When an AsyncChannel's awaited `write()` goes on.
enum class AsyncWriteCompletion {
  /// Once the write completed (the transport took it); its failure is thrown there.
  written,
  /// Once the write is queued and flushed (SwiftNIO's NIOAsyncWriter): the writer does not wait
  /// for the socket, so several writes can be on their way and go out in one system call. A
  /// failed write is not thrown by that write: the transport's write error reaches the inbound
  /// stream (`next()` throws it) and, under auto_close, closes the channel, after which `write()`
  /// throws ClosedChannelError.
  queued,
};

/// Back-pressure of AsyncChannel's inbound side and its writes' completion. Once
/// `high_watermark` messages wait for the reader, the channel stops reading (auto_read off); it
/// reads again when fewer than `low_watermark` wait. `AsyncChannel::wrap` throws
/// InvalidArgumentError unless 0 < `low_watermark` <= `high_watermark`.
struct AsyncChannelOptions {
  /// Reading resumes when fewer messages than this wait.
  std::size_t low_watermark = 2;
  /// Reading stops when this many messages wait.
  std::size_t high_watermark = 16;
  /// When an awaited `write()` goes on (either way it first waits while the channel is
  /// unwritable).
  AsyncWriteCompletion write_completion = AsyncWriteCompletion::written;
};

}  // namespace trellis
