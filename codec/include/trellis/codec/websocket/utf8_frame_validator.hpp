// Utf8FrameValidator: checks that text messages and close reasons are UTF-8 (RFC 6455 §8.1),
// fragment by fragment, failing at the first invalid byte with close status 1007.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include <trellis/pipeline/channel_handler.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

namespace trellis::websocket {

/// The incremental UTF-8 check behind Utf8FrameValidator: feed the bytes of one text in pieces,
/// then ask whether it ended on a character boundary. Rejects overlong forms, surrogates
/// (U+D800-U+DFFF) and code points above U+10FFFF, at the first byte that makes the text invalid.
class Utf8Validator {
 public:
  /// Checks the next bytes. Returns how many were accepted: all of them (`bytes.size()`) when
  /// valid so far, else the offset of the first invalid byte (the validator then stays failed).
  std::size_t feed(std::span<const std::byte> bytes) noexcept;
  /// True when everything fed so far is valid and ends on a character boundary.
  bool complete() const noexcept { return state_ == kAccept; }
  /// True once an invalid byte was fed.
  bool failed() const noexcept { return state_ == kReject; }
  /// Starts a new text.
  void reset() noexcept { state_ = kAccept; }

 private:
  static constexpr std::uint8_t kAccept = 0;
  static constexpr std::uint8_t kReject = 8;
  std::uint8_t state_ = kAccept;
};

/// Checks the payloads of TextWebSocketFrame and its ContinuationWebSocketFrame fragments, and
/// the reasons of CloseWebSocketFrame, as UTF-8 (Netty's Utf8FrameValidator). Each frame is
/// checked when it arrives, the state carried across fragments, so a message fails at the frame
/// holding its first invalid byte, and a message whose last fragment ends inside a character
/// fails there. Valid frames pass on untouched. On failure a CloseWebSocketFrame with 1007 is
/// written and the channel closed once it went out (unless constructed with false), then
/// WebSocketProtocolError is thrown; later frames are dropped. Put it right after the decoder.
/// On the channel's loop; not sharable.
class Utf8FrameValidator : public ChannelInboundHandler {
 public:
  /// A validator; `close_on_protocol_violation` false only throws on invalid text.
  explicit Utf8FrameValidator(bool close_on_protocol_violation = true) noexcept
      : close_on_protocol_violation_(close_on_protocol_violation) {}

  /// Checks text, continuation and close frames; passes every message on unless it failed.
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;

 private:
  [[noreturn]] void fail(ChannelHandlerContext& ctx, const char* what);

  Utf8Validator utf8_;
  bool in_text_ = false;  // a fragmented text message is in progress
  bool failed_ = false;
  bool close_on_protocol_violation_;
};

}  // namespace trellis::websocket
