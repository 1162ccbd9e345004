// HttpContentDecompressor: message bodies with a Content-Encoding decoded within limits.
#include <trellis/codec/http/http_content_decompressor.hpp>

#include <string>
#include <utility>

#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

#include <spdlog/spdlog.h>

#include "http_expectation.hpp"

namespace trellis::http {

HttpContentDecompressor::HttpContentDecompressor(codec::DecompressionLimits limits)
    : limits_(limits) {}
HttpContentDecompressor::~HttpContentDecompressor() = default;

codec::BoundedDecompression* HttpContentDecompressor::begin(HttpHeaders& headers, bool streamed) {
  const auto encoding = headers.get(HeaderId::kContentEncoding);
  if (!encoding) return nullptr;
  const auto coding = parse_content_coding(*encoding);
  if (!coding || headers.count(HeaderId::kContentEncoding) != 1) return nullptr;
  headers.remove(header_name(HeaderId::kContentEncoding));
  if (*coding == ContentCoding::kIdentity) return nullptr;
  auto& slot = streams_[static_cast<std::size_t>(*coding)];
  if (!slot) {
    std::unique_ptr<codec::StreamDecompressor> engine;
    switch (*coding) {
      case ContentCoding::kGzip:
        engine = codec::make_zlib_decompressor(codec::ZlibWrapper::kGzip);
        break;
      case ContentCoding::kDeflate:
        engine = codec::make_zlib_decompressor(codec::ZlibWrapper::kZlibOrNone);
        break;
      case ContentCoding::kBrotli:
        engine = codec::make_brotli_decompressor();
        break;
      case ContentCoding::kZstd:
        engine = codec::make_zstd_decompressor();
        break;
      case ContentCoding::kIdentity:
        return nullptr;
    }
    slot = std::make_unique<codec::BoundedDecompression>(std::move(engine), limits_);
  } else {
    slot->reset();
  }
  if (streamed) {
    headers.remove(header::kContentLength);
    if (!headers.contains_token(HeaderId::kTransferEncoding, "chunked")) {
      headers.add(HeaderId::kTransferEncoding, "chunked");
    }
  }
  return slot.get();
}

namespace {

// A request whose body fails to decode is refused (in its turn, the connection then closes):
// 413 when it decodes past the limits, 400 when it is corrupt, truncated or followed by bytes.
void refuse(ChannelHandlerContext& ctx, const codec::DecoderError& error) {
  const bool too_large = dynamic_cast<const codec::DecompressionLimitError*>(&error) != nullptr;
  spdlog::debug("[{}] request body refused ({}): {}", ctx.channel().id().as_short_text(),
                too_large ? 413 : 400, error.what());
  detail::refuse(ctx, too_large ? 413 : 400);
}

// The whole body decoded into one buffer (bounded by the limits).
ByteBuf decode_whole(ChannelHandlerContext& ctx, codec::BoundedDecompression& stream,
                     const ByteBuf& content) {
  std::span<const std::byte> in = content.readable_span();
  ByteBuf body = ctx.alloc().buffer(std::min<std::size_t>(in.size() * 4 + 64, 1 << 20));
  for (;;) {
    ByteBuf chunk = stream.next(ctx.alloc(), in);
    if (!chunk.is_readable()) break;
    body.write_bytes(chunk);
  }
  if (stream.is_started() && !stream.is_finished()) {
    throw codec::DecoderError("the compressed body is truncated");
  }
  return body;
}

}  // namespace

void HttpContentDecompressor::decode_piece(ChannelHandlerContext& ctx, ByteBuf content, bool last,
                                           TrailerFields* trailers) {
  std::span<const std::byte> in = content.readable_span();
  try {
    for (;;) {
      ByteBuf chunk = active_->next(ctx.alloc(), in);
      if (!chunk.is_readable()) break;
      ctx.fire_channel_read(Message(HttpContent{std::move(chunk)}));
    }
    if (last && active_->is_started() && !active_->is_finished()) {
      throw codec::DecoderError("the compressed body is truncated");
    }
  } catch (const codec::DecoderError& error) {
    active_ = nullptr;
    discarding_ = !last;
    if (!decoding_request_) throw;
    refuse(ctx, error);
    return;
  } catch (...) {
    active_ = nullptr;
    discarding_ = !last;
    throw;
  }
  if (last) {
    active_ = nullptr;
    ctx.fire_channel_read(Message(LastHttpContent{ByteBuf(), std::move(*trailers)}));
  }
}

void HttpContentDecompressor::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (auto* r = msg.try_get<HttpRequest>()) {
    discarding_ = false;
    decoding_request_ = true;
    active_ = begin(r->headers, true);
  } else if (auto* s = msg.try_get<HttpResponse>()) {
    if (s->status.code >= 200) {  // an interim response has no body
      discarding_ = false;
      decoding_request_ = false;
      active_ = begin(s->headers, true);
    }
  } else if (auto* piece = msg.try_get<HttpContent>()) {
    if (discarding_) return;
    if (active_ != nullptr) return decode_piece(ctx, std::move(piece->content), false, nullptr);
  } else if (auto* last = msg.try_get<LastHttpContent>()) {
    if (discarding_) {
      discarding_ = false;
      return;
    }
    if (active_ != nullptr) {
      return decode_piece(ctx, std::move(last->content), true, &last->trailers);
    }
  } else if (auto* fr = msg.try_get<FullHttpRequest>()) {
    // An empty body (a response to HEAD, 304) is left as it is, its headers describing the
    // representation.
    if (auto* stream = fr->content.is_readable() ? begin(fr->headers, false) : nullptr) {
      try {
        fr->content = decode_whole(ctx, *stream, fr->content);
      } catch (const codec::DecoderError& error) {
        refuse(ctx, error);
        return;
      }
      if (fr->headers.contains(HeaderId::kContentLength)) {
        fr->headers.set(header::kContentLength, std::to_string(fr->content.readable_bytes()));
      }
    }
  } else if (auto* fs = msg.try_get<FullHttpResponse>()) {
    // An empty body (a response to HEAD, 304) is left as it is, its headers describing the
    // representation.
    if (auto* stream = fs->content.is_readable() ? begin(fs->headers, false) : nullptr) {
      fs->content = decode_whole(ctx, *stream, fs->content);
      if (fs->headers.contains(HeaderId::kContentLength)) {
        fs->headers.set(header::kContentLength, std::to_string(fs->content.readable_bytes()));
      }
    }
  }
  ctx.fire_channel_read(std::move(msg));
}

}  // namespace trellis::http
