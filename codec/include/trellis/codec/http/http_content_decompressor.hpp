// HttpContentDecompressor: decodes message bodies sent with Content-Encoding gzip, deflate, br or
// zstd, within DecompressionLimits (requests on a server, responses on a client).
#pragma once

#include <array>
#include <memory>

#include <trellis/codec/compression/stream_decompressor.hpp>
#include <trellis/codec/http/content_coding.hpp>
#include <trellis/codec/http/http_message.hpp>
#include <trellis/pipeline/channel_handler.hpp>

namespace trellis::http {

/// Decodes message bodies sent with Content-Encoding gzip, deflate, br or zstd, within
/// DecompressionLimits. On the channel's loop; not sharable.
///
/// Place it after the HTTP codec and before an HttpObjectAggregator. For a decoded message the
/// Content-Encoding field is removed; a streamed one (head, HttpContent..., LastHttpContent) loses
/// Content-Length and goes "Transfer-Encoding: chunked" (its size is unknown until the end), its
/// body comes out in HttpContent pieces of at most limits.chunk_size bytes; a FullHttpRequest /
/// FullHttpResponse gets its body decoded whole and Content-Length recomputed (one with an empty
/// body, such as an answer to HEAD, is left as it is). "identity" is
/// removed; other or several codings ("gzip, br") pass through untouched. A body that is corrupt,
/// truncated, followed by bytes, or decodes past the limits ends its message: the rest of it is
/// dropped, and a request is refused (an HttpRefusal, 413 for the limits and 400 otherwise, which
/// an HttpServerCodec sends after the responses to the requests before it, then closing the
/// connection), while a response raises a DecoderError (DecompressionLimitError for the limits)
/// to exception_caught of the next handlers.
class HttpContentDecompressor : public ChannelInboundHandler {
 public:
  /// A decompressor whose every body is bounded by `limits`.
  explicit HttpContentDecompressor(codec::DecompressionLimits limits = {});
  ~HttpContentDecompressor() override;

  /// Decodes the body of an encoded message; other messages pass on untouched.
  void channel_read(ChannelHandlerContext& ctx, Message msg) override;

 private:
  // The decompression for a message with these headers (nullptr: not encoded, or not by us);
  // fixes the headers when it decodes.
  codec::BoundedDecompression* begin(HttpHeaders& headers, bool streamed);
  void decode_piece(ChannelHandlerContext& ctx, ByteBuf content, bool last,
                    TrailerFields* trailers);

  codec::DecompressionLimits limits_;
  std::array<std::unique_ptr<codec::BoundedDecompression>, 5> streams_;  // by ContentCoding
  codec::BoundedDecompression* active_ = nullptr;                        // decoding a streamed body
  bool discarding_ = false;        // the current streamed body failed: drop it up to its end
  bool decoding_request_ = false;  // the streamed body being decoded is a request's
};

}  // namespace trellis::http
