// The exception hierarchy of trellis: every error the framework throws or fails a future with
// derives from trellis::Error (a std::runtime_error); I/O failures carry their std::error_code.
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>

namespace trellis {

/// The base of every exception trellis throws or fails a future with.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A blocking call (Future::get) was made on the thread of the executor that must complete the
/// future: waiting would deadlock, so it is refused.
class BlockingOperationError : public Error {
 public:
  using Error::Error;
};

/// An executor that is shut down (or shutting down past its quiet period) refuses new work.
class RejectedExecutionError : public Error {
 public:
  using Error::Error;
};

/// The operation or task was cancelled before it completed.
class CancelledError : public Error {
 public:
  /// A CancelledError saying "cancelled".
  CancelledError() : Error("cancelled") {}
  using Error::Error;
};

/// An API was used in a state that does not allow it (e.g. completing a promise twice).
class IllegalStateError : public Error {
 public:
  using Error::Error;
};

/// An argument is outside what the API accepts.
class InvalidArgumentError : public Error {
 public:
  using Error::Error;
};

/// A blocking wait ran out of time.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

/// An index or length outside a buffer's bounds.
class IndexOutOfBoundsError : public Error {
 public:
  using Error::Error;
};

/// An operation on a channel that is closed.
class ClosedChannelError : public Error {
 public:
  /// A ClosedChannelError saying "channel closed".
  ClosedChannelError() : Error("channel closed") {}
  using Error::Error;
};

/// A message was read as a type it does not hold.
class WrongTypeError : public Error {
 public:
  using Error::Error;
};

/// Nothing was read for the ReadTimeoutHandler's timeout; the channel is closed after it.
class ReadTimeoutError : public Error {
 public:
  /// A ReadTimeoutError saying "read timed out".
  ReadTimeoutError() : Error("read timed out") {}
  using Error::Error;
};

/// A write did not complete within the WriteTimeoutHandler's timeout; the channel is closed.
class WriteTimeoutError : public Error {
 public:
  /// A WriteTimeoutError saying "write timed out".
  WriteTimeoutError() : Error("write timed out") {}
  using Error::Error;
};

/// An I/O failure; code() is the operating system's error.
class IoError : public Error {
 public:
  /// An error for `code`, described as "what: <the code's message>".
  IoError(std::error_code code, const std::string& what)
      : Error(what + ": " + code.message()), code_(code) {}
  /// An error for `code`, described by the code's message.
  explicit IoError(std::error_code code) : Error(code.message()), code_(code) {}
  /// The operating system's error.
  const std::error_code& code() const noexcept { return code_; }

 private:
  std::error_code code_;
};

}  // namespace trellis
