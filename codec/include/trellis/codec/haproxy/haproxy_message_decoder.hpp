// HAProxyMessageDecoder: the first handler of a server behind a load balancer that speaks the
// PROXY protocol (HAProxy's spec, versions 1 and 2). It decodes the one header the proxy sends
// before the client's bytes, leaves it as a channel attribute and a user event, then removes
// itself so the rest of the stream goes on unchanged.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string_view>
#include <utility>

#include <trellis/codec/byte_to_message_decoder.hpp>
#include <trellis/codec/decoder_error.hpp>
#include <trellis/codec/haproxy/haproxy_message.hpp>
#include <trellis/pipeline/scheduled_future.hpp>

namespace trellis::codec {

/// What HAProxyMessageDecoder accepts.
struct HAProxyDecoderOptions {
  /// The largest version 2 header, fixed part and TLVs (a version 1 header is 107 bytes at most
  /// by the spec). Larger: refused with TooLongFrameError.
  std::size_t max_header_size = 4096;
  /// How long the peer may take to send the whole header, from when the channel is active, on
  /// the loop's clock; past it the connection is closed. Zero or less: no deadline.
  std::chrono::nanoseconds header_timeout = std::chrono::seconds(5);
  /// Whether version 1 (text) headers are accepted (by default, yes).
  bool accept_v1 = true;
  /// Whether version 2 (binary) headers are accepted (by default, yes).
  bool accept_v2 = true;
};

/// The peer did not send a complete PROXY protocol header within the header timeout.
class HAProxyTimeoutError : public DecoderError {
 public:
  using DecoderError::DecoderError;
};

/// Decodes the PROXY protocol header that a load balancer (HAProxy `send-proxy` /
/// `send-proxy-v2`, nginx `proxy_protocol on`, AWS NLB, ...) sends first on each connection.
/// Put it first in a server child's pipeline (before TLS: the header is in the clear). Once the
/// header is decoded, the HAProxyMessage is set as the channel attribute haproxy_message_key()
/// and fired as a user event (user_event_triggered), and the decoder removes itself: the bytes
/// after the header reach the next handler as they came. The parsing is strict: a connection
/// that does not start with a well-formed header of an accepted version (bad signature, unknown
/// version, command or family, a truncated address block, a malformed or overlong TLV, a
/// CRC32C that does not match, a v1 line over 107 bytes or with a bad address or port) is
/// refused: DecoderError (TooLongFrameError past max_header_size) is fired to exception_caught
/// and the channel is closed, before any of its bytes reach the next handler. A header not
/// complete within header_timeout gets HAProxyTimeoutError and a close. Not sharable.
class HAProxyMessageDecoder final : public ByteToMessageDecoder {
 public:
  /// A decoder that accepts what options allow.
  explicit HAProxyMessageDecoder(HAProxyDecoderOptions options = {});
  ~HAProxyMessageDecoder() override;

  /// Arms the header deadline when the channel is (or becomes) active.
  void handler_added(ChannelHandlerContext& ctx) override;
  void channel_active(ChannelHandlerContext& ctx) override;

 protected:
  void decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& out) override;
  void handler_removed0(ChannelHandlerContext& ctx) override;

 private:
  void arm_timer(ChannelHandlerContext& ctx);
  void cancel_timer() noexcept;
  // Fires error, then closes the channel; nothing after it reaches the next handler.
  void refuse(ChannelHandlerContext& ctx, std::exception_ptr error);

  HAProxyDecoderOptions options_;
  ScheduledFuture<void> timer_;
  bool timer_armed_ = false;
  bool done_ = false;
};

/// Parses one PROXY protocol header at the start of `bytes`: the message and the header's
/// length, nullopt when more bytes are needed. Throws DecoderError (TooLongFrameError past
/// max_header_size) when the bytes cannot start a valid header. For tests and for decoders of
/// other transports (datagrams).
std::optional<std::pair<HAProxyMessage, std::size_t>> parse_haproxy_header(
    std::string_view bytes, const HAProxyDecoderOptions& options = {});

}  // namespace trellis::codec
