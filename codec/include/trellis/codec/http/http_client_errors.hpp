// The ways an HTTP client request fails, each its own type: the connection could not be made
// (ConnectError), a deadline ran out (TimeoutError, with the phase), the connection closed
// before the response was complete (ConnectionClosedError). A malformed response fails with the
// codec's codec::DecoderError (HttpParseError, TooLongFrameError).
#pragma once

#include <string>
#include <system_error>

#include <trellis/pipeline/error.hpp>

namespace trellis::http {

/// The connection to the server could not be made (refused, unreachable, name not resolved):
/// code() is the operating system's (or the resolver's) error.
class ConnectError : public IoError {
 public:
  using IoError::IoError;
};

/// A client deadline ran out. It is a trellis::TimeoutError, so code that catches those catches
/// it too; phase() says which deadline.
class TimeoutError : public trellis::TimeoutError {
 public:
  /// Which deadline ran out.
  enum class Phase {
    kConnect,   ///< HttpClientOptions::connect_timeout: the TCP connection was not established
    kPoolWait,  ///< request_timeout ran out while the request waited for a connection
    kRequest,   ///< request_timeout ran out while the request was sent or its response read
    kRead,      ///< read_timeout: no byte of the awaited response arrived for that long
  };
  /// A timeout of `phase`, described by `what`.
  TimeoutError(Phase phase, const std::string& what);
  /// Which deadline ran out.
  Phase phase() const noexcept { return phase_; }

 private:
  Phase phase_;
};

/// "connect", "pool wait", "request" or "read".
const char* to_string(TimeoutError::Phase phase) noexcept;

/// The connection closed before the whole response was read. may_have_been_processed() is true
/// when the request had been handed to the connection: the server may have acted on it, so only
/// an idempotent request is safe to send again.
class ConnectionClosedError : public ClosedChannelError {
 public:
  /// A closed connection, described by `what`.
  ConnectionClosedError(bool may_have_been_processed, const std::string& what)
      : ClosedChannelError(what), may_have_been_processed_(may_have_been_processed) {}
  /// The request had been handed to the connection: the server may have acted on it.
  bool may_have_been_processed() const noexcept { return may_have_been_processed_; }

 private:
  bool may_have_been_processed_;
};

/// A redirect from an https:// URL to an http:// one, refused unless
/// HttpClientOptions::allow_insecure_redirects: following it would send the request (and read
/// its answer) in clear text although the application asked for TLS.
class InsecureRedirectError : public Error {
 public:
  using Error::Error;
};

/// A request was redirected more than HttpClientOptions::max_redirects times.
class TooManyRedirectsError : public Error {
 public:
  using Error::Error;
};

}  // namespace trellis::http
