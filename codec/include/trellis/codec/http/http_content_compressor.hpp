// HttpContentCompressor: compresses HTTP response bodies (br, zstd, gzip or deflate) as the
// request's Accept-Encoding allows. Sits after HttpServerCodec, before the handlers that answer.
#pragma once

#include <array>
#include <cstddef>
#include <deque>
#include <memory>
#include <string_view>

#include <trellis/codec/compression/stream_compressor.hpp>
#include <trellis/codec/http/content_coding.hpp>
#include <trellis/codec/http/http_message.hpp>
#include <trellis/pipeline/channel_handler.hpp>

namespace trellis::http {

/// False for content types that are compressed already (image/* but SVG, audio/*, video/*,
/// font/woff*, zip, gzip, zstd, brotli, 7z, rar, xz, bzip2, pdf...).
bool is_compressible_content_type(std::string_view content_type) noexcept;

/// Each request's Accept-Encoding is remembered in request order, so that pipelined responses are
/// paired with their own request. A response is compressed unless: it answers HEAD, is 1xx, 204
/// or 304, already has a Content-Encoding, its Content-Type is not compressible, its body (or
/// Content-Length of a streamed one) is under min_body_bytes, or the request accepts no enabled
/// coding. A compressed response gets Content-Encoding and "Vary: Accept-Encoding" (also an
/// uncompressed one that another Accept-Encoding would have changed), a strong ETag is made weak.
/// - FullHttpResponse: the body is compressed whole; Content-Length is recomputed. A body that
///   does not shrink is sent as it is.
/// - HttpResponse + HttpContent... + LastHttpContent: Content-Length is removed and the body goes
///   chunked (HTTP/1.0 responses are not compressed: they have no chunked framing); every flush
///   emits what was compressed so far as a complete block, so streamed output is not held back.
///   A FileRegion body cannot be compressed: writing one fails with EncoderError.
class HttpContentCompressor : public ChannelDuplexHandler {
 public:
  struct Options {
    std::size_t min_body_bytes = 1024;
    ContentCodings codings;  ///< which codings may be chosen
    int gzip_level = 6;      ///< gzip and deflate, 1-9
    int brotli_quality = 4;  ///< 0-11
    int zstd_level = 3;      ///< 1-19
  };
  HttpContentCompressor() : HttpContentCompressor(Options{}) {}
  explicit HttpContentCompressor(Options options);
  ~HttpContentCompressor() override;

  void channel_read(ChannelHandlerContext& ctx, Message msg) override;
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;
  void flush(ChannelHandlerContext& ctx) override;

  const Options& options() const noexcept { return options_; }
  /// Requests whose response has not started yet (tests and diagnostics).
  std::size_t pending_requests() const noexcept { return pending_.size(); }

 private:
  struct Pending {
    ContentCoding coding;
    bool head;
  };
  // The coding for a response with these headers, or kIdentity (sets Vary as it goes).
  ContentCoding choose(const Pending& request, std::uint16_t status, HttpHeaders& headers,
                       std::size_t body_bytes);
  Pending next_request();
  codec::StreamCompressor& compressor(ContentCoding coding);
  void mark_encoded(HttpHeaders& headers, ContentCoding coding);

  Options options_;
  std::deque<Pending> pending_;
  std::array<std::unique_ptr<codec::StreamCompressor>, 5> compressors_;  // by ContentCoding, lazily
  codec::StreamCompressor* streaming_ = nullptr;  // compressing a streamed body
  bool in_streamed_response_ = false;  // a final HttpResponse head went out, no last content
  bool dirty_ = false;                 // streamed input compressed since the last flush
};

}  // namespace trellis::http
