// WebSocketProtocolError: what a WebSocket codec piece throws when the peer breaks RFC 6455, with
// the close status code the connection was (or should be) failed with.
#pragma once

#include <cstdint>
#include <string>

#include <trellis/codec/decoder_error.hpp>

namespace trellis::websocket {

/// The peer broke a rule of RFC 6455 (or a limit of the decoder). status() is the close code the
/// connection is failed with: 1002 (protocol error), 1007 (text that is not UTF-8) or 1009 (a
/// frame or message over the limit). Thrown from channel_read, so it reaches exception_caught.
class WebSocketProtocolError : public codec::DecoderError {
 public:
  /// An error with close status `status`, described by `what`; `position` is the stream offset
  /// (or -1 when unknown).
  WebSocketProtocolError(std::uint16_t status, const std::string& what, std::int64_t position = -1);
  /// The close status code (1002, 1007 or 1009).
  std::uint16_t status() const noexcept { return status_; }

 private:
  std::uint16_t status_;
};

}  // namespace trellis::websocket
