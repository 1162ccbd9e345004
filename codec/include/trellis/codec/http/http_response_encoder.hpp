// HttpResponseEncoder (and HttpRequestEncoder): turn HTTP message objects into bytes. A full
// response goes out as its head and its body (the body's own ByteBuf, not copied) written back
// to back, so the transport sends both with one gathering write; a body of at most
// kCopyBodyThreshold bytes is copied into the head's buffer instead (one buffer, one outbound
// entry). Responses that fit one buffer and are written without a promise share one buffer
// until the next flush (pipelined answers leave as one outbound entry). Chunked bodies are
// framed; responses that must not have a body never get one.
#pragma once

#include <cstdint>

#include <trellis/codec/http/http_message.hpp>
#include <trellis/codec/http/http_method_queue.hpp>
#include <trellis/pipeline/channel_handler.hpp>

namespace trellis::http {

/// Internal, shared by both encoders: what the body of the message being written looks like.
class HttpBodyFraming {
 public:
  /// How body pieces are framed.
  enum class Mode : std::uint8_t {
    kNone,     ///< no message in progress
    kRaw,      ///< as they are (Content-Length or read to the close)
    kChunked,  ///< as chunks
    kSkip      ///< dropped (a body that is not sent: HEAD, 204, 304)
  };
  Mode mode = Mode::kNone;  ///< The framing of the message in progress.
  /// Encodes a body piece (and, when last, the end of the message) into out's components.
  void encode_content(ChannelHandlerContext& ctx, ByteBuf content, const HttpHeaders* trailers,
                      bool last, Message& out);
  /// Writes an HttpContent / LastHttpContent framed as above; any other message unchanged. A
  /// FileRegion is a body piece too (Netty's HttpObjectEncoder): passed on as it is in a raw
  /// body (so the transport can sendfile it), between a chunk header and the chunk's CRLF in a
  /// chunked one, and dropped (its promise succeeding) in a body that is not sent (HEAD, 304).
  void write_content_or_pass(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise);
};

/// Encodes HttpResponse, HttpContent, LastHttpContent and FullHttpResponse into bytes (other
/// messages pass on), coalescing small responses written without a promise until the next
/// flush. One per channel; on the channel's loop.
class HttpResponseEncoder : public ChannelOutboundHandler {
 public:
  /// What the encoder adds to responses.
  struct Options {
    /// Add a Date header (from a per-thread cache refreshed once a second) when missing.
    bool add_date_header = true;
    /// Give a FullHttpResponse a Content-Length when it has neither that nor Transfer-Encoding.
    bool add_content_length = true;
  };
  /// An encoder with the default options.
  HttpResponseEncoder() : HttpResponseEncoder(Options{}) {}
  /// An encoder with these options.
  explicit HttpResponseEncoder(Options options) : options_(options) {}

  /// A FullHttpResponse that fits one buffer (no body, or a body of at most kCopyBodyThreshold
  /// bytes) and comes with a void promise is appended to the responses held since the last flush
  /// instead of being written alone; everything else first writes what is held, then itself.
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;
  /// write() on a message and promise in place (HttpServerCodec's path, without moving them).
  void write_message(ChannelHandlerContext& ctx, Message& msg, ChannelPromise& promise);
  /// Writes what is held, then flushes.
  void flush(ChannelHandlerContext& ctx) override;
  /// @name Closing
  ///@{

  /// Write what is held first, so the outbound buffer fails it as it would any unflushed write.
  void close(ChannelHandlerContext& ctx, ChannelPromise promise) override;
  void disconnect(ChannelHandlerContext& ctx, ChannelPromise promise) override;
  ///@}
  /// Writes what is held (a codec removed after a response, e.g. for an upgrade, loses nothing).
  void handler_removed(ChannelHandlerContext& ctx) override;
  /// Writes the responses held for coalescing on to the next handler (unflushed).
  void write_held(ChannelHandlerContext& ctx);
  /// Bytes held for coalescing (tests and diagnostics).
  std::size_t held_bytes() const noexcept { return held_.readable_bytes(); }

  /// HttpServerCodec tells the encoder the method of each request, in order, so that the body of
  /// a response to HEAD is dropped (its headers are kept).
  void on_request_method(HttpMethod::Id method) { methods_.push_back(method); }

  /// @name Read batches
  ///@{

  /// HttpServerCodec brackets the decoding of each inbound buffer with these: responses written
  /// meanwhile (pipelined requests answered at once) share one clock reading for their Date.
  void begin_read_batch() noexcept { in_read_batch_ = true; }
  void end_read_batch() noexcept {
    in_read_batch_ = false;
    batch_nanos_ = -1;
  }
  ///@}

 private:
  bool answering_head();
  std::int64_t date_clock(ChannelHandlerContext& ctx);
  // Appends the head to out, sized once and written without bounds checks; inline_body (if any)
  // copied after it. When out has too little room, what it holds is written on (unflushed) and
  // out becomes a new buffer of at least min_capacity bytes.
  void encode_head(ChannelHandlerContext& ctx, ByteBuf& out, HttpVersion version,
                   const HttpResponseStatus& status, const HttpHeaders& headers,
                   const ByteBuf* full_body, const ByteBuf* inline_body,
                   std::size_t min_capacity = 0);

  Options options_;
  ByteBuf held_;  // encoded responses written with void promises since the last flush
  bool in_read_batch_ = false;
  std::int64_t batch_nanos_ = -1;
  HttpBodyFraming framing_;
  HttpMethodQueue methods_;
};

/// Bodies up to this many bytes are copied into the head's buffer rather than sent as a second
/// buffer: copying a few bytes costs less than an outbound entry and an iovec (Netty's
/// HttpObjectEncoder draws the line at 128 bytes too).
inline constexpr std::size_t kCopyBodyThreshold = 128;

/// The buffer that collects held responses: room for 16 pipelined responses of ~200 bytes. When
/// the next one does not fit, the buffer is written on (unflushed) and a new one started, so
/// the outbound buffer's water marks see all but at most one buffer of a handler that writes a
/// lot without flushing, and nothing held is ever copied into a bigger buffer.
inline constexpr std::size_t kHeldBufferSize = 4096;

/// Encodes HttpRequest, HttpContent, LastHttpContent and FullHttpRequest into bytes (other
/// messages pass on). One per channel; on the channel's loop.
class HttpRequestEncoder : public ChannelOutboundHandler {
 public:
  /// Encodes an HTTP message and writes the bytes on with the write's promise.
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;

 private:
  HttpBodyFraming framing_;
};

/// True when a response with this status carries no body (1xx, 204, 304).
constexpr bool status_has_no_body(std::uint16_t code) noexcept {
  return code < 200 || code == 204 || code == 304;
}

}  // namespace trellis::http
