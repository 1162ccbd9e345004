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

/// Place it after the HTTP codec and before an HttpObjectAggregator. For a decoded message the
/// Content-Encoding field is removed; a streamed one (head, HttpContent..., LastHttpContent) loses
/// Content-Length and goes "Transfer-Encoding: chunked" (its size is unknown until the end), its
/// body comes out in HttpContent pieces of at most limits.chunk_size bytes; a FullHttpRequest /
/// FullHttpResponse gets its body decoded whole and Content-Length recomputed (one with an empty
/// body, such as an answer to HEAD, is left as it is). "identity" is
/// removed; other or several codings ("gzip, br") pass through untouched. A body that is corrupt,
/// truncated, followed by bytes, or decodes past the limits raises a DecoderError
/// (DecompressionLimitError for the limits) to exception_caught of the next handlers, and the
/// rest of that message is dropped.
class HttpContentDecompressor : public ChannelInboundHandler {
 public:
  explicit HttpContentDecompressor(codec::DecompressionLimits limits = {});
  ~HttpContentDecompressor() override;

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
  bool discarding_ = false;  // the current streamed body failed: drop it up to its end
};

}  // namespace trellis::http
