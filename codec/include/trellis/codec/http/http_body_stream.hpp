// HttpBodyStream: the body of a streamed HTTP response between the connection that reads it and
// the code that consumes it. A bounded queue of chunks with back-pressure: while
// kMaxBufferedChunks chunks wait for the reader, the connection stops reading (auto_read off),
// and it reads again as soon as the reader takes one. All of its state lives on the connection's
// loop; next() and abandon() may be called from any thread.
#pragma once

#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <optional>

#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/event_executor.hpp>
#include <trellis/pipeline/future.hpp>
#include <trellis/pipeline/promise.hpp>

namespace trellis {
class Channel;
}

namespace trellis::http {

/// The body of a streamed HTTP response, queued between the connection that reads it and the
/// code that consumes it (see StreamingHttpResponse). The connection's side runs on the
/// connection's loop; next() and abandon() may be called from any thread.
class HttpBodyStream : public std::enable_shared_from_this<HttpBodyStream> {
 public:
  /// Chunks held for a reader that does not take them before the connection stops reading. (A
  /// read already decoded may add the rest of its chunks: the bound is this plus one read's.)
  static constexpr std::size_t kMaxBufferedChunks = 4;

  /// channel (of loop) is paused and resumed while the body is read; it is forgotten at the end.
  HttpBodyStream(EventExecutor& loop, Channel* channel) : loop_(loop), channel_(channel) {}

  /// @name The connection's side (on the loop)
  ///@{

  /// One more chunk of the body (empty chunks are dropped).
  void push(ByteBuf chunk);
  /// The body ended: the reader gets what is queued, then nullopt.
  void finish();
  /// The body cannot be read to the end: the reader gets what is queued, then error.
  void fail(std::exception_ptr error);
  /// True once finish() or fail() was called.
  bool ended() const noexcept { return ended_; }
  ///@}

  /// @name The reader's side (any thread)
  ///@{

  /// The next chunk; nullopt after the last one; fails with the error that cut the body short,
  /// or IllegalStateError while another next() is pending. The future belongs to the loop.
  Future<std::optional<ByteBuf>> next();
  /// The reader gives up: queued chunks are dropped and, unless the body already ended, the
  /// connection is closed (it cannot carry another request with the rest of this body unread).
  void abandon();
  ///@}

 private:
  void next_on_loop(Promise<std::optional<ByteBuf>> promise);
  void abandon_on_loop();
  void pause();
  void resume();

  EventExecutor& loop_;
  Channel* channel_;  // null once the body ended
  std::deque<ByteBuf> chunks_;
  std::optional<Promise<std::optional<ByteBuf>>> waiting_;
  std::exception_ptr error_;
  bool ended_ = false;
  bool paused_ = false;
  bool abandoned_ = false;
};

}  // namespace trellis::http
