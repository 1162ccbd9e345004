// HttpContentCompressor: response bodies compressed as each request's Accept-Encoding allows.
#include <trellis/codec/http/http_content_compressor.hpp>

#include <string>
#include <utility>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/codec/http/http_response_encoder.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/file_region.hpp>

namespace trellis::http {
namespace {

bool starts_with_icase(std::string_view s, std::string_view prefix) noexcept {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

// True when a comma-separated list holds token (case-insensitive).
bool list_contains(std::string_view list, std::string_view token) noexcept {
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (iequals(item, token)) return true;
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return false;
}

void add_vary_accept_encoding(HttpHeaders& headers) {
  const auto vary = headers.get("Vary");
  if (!vary) {
    headers.add("Vary", "Accept-Encoding");
  } else if (!list_contains(*vary, "Accept-Encoding") && !list_contains(*vary, "*")) {
    headers.set("Vary", std::string(*vary) + ", Accept-Encoding");
  }
}

}  // namespace

bool is_compressible_content_type(std::string_view type) noexcept {
  const auto semi = type.find(';');
  type = type.substr(0, semi);
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  if (starts_with_icase(type, "image/"))
    return iequals(type, "image/svg+xml") || iequals(type, "image/x-icon") ||
           iequals(type, "image/bmp");
  if (starts_with_icase(type, "audio/") || starts_with_icase(type, "video/")) return false;
  if (starts_with_icase(type, "font/woff")) return false;
  static constexpr std::string_view kCompressed[] = {"application/zip",
                                                     "application/gzip",
                                                     "application/x-gzip",
                                                     "application/zstd",
                                                     "application/x-brotli",
                                                     "application/x-bzip2",
                                                     "application/x-7z-compressed",
                                                     "application/x-rar-compressed",
                                                     "application/vnd.rar",
                                                     "application/x-xz",
                                                     "application/pdf",
                                                     "application/x-compress",
                                                     "application/octet-stream+gzip"};
  for (std::string_view c : kCompressed) {
    if (iequals(type, c)) return false;
  }
  return true;
}

HttpContentCompressor::HttpContentCompressor(Options options) : options_(options) {}
HttpContentCompressor::~HttpContentCompressor() = default;

void HttpContentCompressor::channel_read(ChannelHandlerContext& ctx, Message msg) {
  const HttpHeaders* headers = nullptr;
  bool head = false;
  if (auto* r = msg.try_get<HttpRequest>()) {
    headers = &r->headers;
    head = r->method == HttpMethod::kHead;
  } else if (auto* f = msg.try_get<FullHttpRequest>()) {
    headers = &f->headers;
    head = f->method == HttpMethod::kHead;
  }
  if (headers != nullptr) {
    pending_.push_back(Pending{
        select_content_coding(headers->get(HeaderId::kAcceptEncoding), options_.codings), head});
  }
  ctx.fire_channel_read(std::move(msg));
}

HttpContentCompressor::Pending HttpContentCompressor::next_request() {
  if (pending_.empty()) return Pending{ContentCoding::kIdentity, false};  // unsolicited response
  Pending p = pending_.front();
  pending_.pop_front();
  return p;
}

ContentCoding HttpContentCompressor::choose(const Pending& request, std::uint16_t status,
                                            HttpHeaders& headers, std::size_t body_bytes) {
  if (request.head || status_has_no_body(status)) return ContentCoding::kIdentity;
  if (headers.contains(HeaderId::kContentEncoding)) return ContentCoding::kIdentity;
  if (auto type = headers.get(HeaderId::kContentType);
      type && !is_compressible_content_type(*type)) {
    return ContentCoding::kIdentity;
  }
  if (body_bytes < options_.min_body_bytes) return ContentCoding::kIdentity;
  // From here the answer depends on the request's Accept-Encoding.
  add_vary_accept_encoding(headers);
  return request.coding;
}

codec::StreamCompressor& HttpContentCompressor::compressor(ContentCoding coding) {
  auto& slot = compressors_[static_cast<std::size_t>(coding)];
  if (!slot) {
    switch (coding) {
      case ContentCoding::kGzip:
        slot = codec::make_zlib_compressor(codec::ZlibWrapper::kGzip, options_.gzip_level);
        break;
      case ContentCoding::kDeflate:
        slot = codec::make_zlib_compressor(codec::ZlibWrapper::kZlib, options_.gzip_level);
        break;
      case ContentCoding::kBrotli:
        slot = codec::make_brotli_compressor(options_.brotli_quality);
        break;
      case ContentCoding::kZstd:
        slot = codec::make_zstd_compressor(options_.zstd_level);
        break;
      case ContentCoding::kIdentity:
        throw codec::EncoderError("no compressor for identity");
    }
  } else {
    slot->reset();  // reuses the library's state: no allocation per response for zlib and zstd
  }
  return *slot;
}

void HttpContentCompressor::mark_encoded(HttpHeaders& headers, ContentCoding coding) {
  headers.set(header_name(HeaderId::kContentEncoding), content_coding_name(coding));
  // A strong validator names these exact bytes; the compressed ones are only equivalent.
  if (auto etag = headers.get("ETag"); etag && !etag->starts_with("W/")) {
    headers.set("ETag", "W/" + std::string(*etag));
  }
}

void HttpContentCompressor::write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  if (auto* full = msg.try_get<FullHttpResponse>()) {
    if (full->status.code >= 200) {
      const Pending request = next_request();
      const ContentCoding coding =
          choose(request, full->status.code, full->headers, full->content.readable_bytes());
      if (coding != ContentCoding::kIdentity) {
        const auto body = full->content.readable_span();
        ByteBuf out = ctx.alloc().buffer(body.size() / 4 + 256);
        codec::StreamCompressor& engine = compressor(coding);
        engine.set_source_size(body.size());  // the whole body is known: size the tables for it
        engine.compress(body, codec::StreamCompressor::Op::kFinish, out);
        if (out.readable_bytes() < body.size()) {
          full->content = std::move(out);
          mark_encoded(full->headers, coding);
          if (full->headers.contains(HeaderId::kContentLength) ||
              !full->headers.contains(HeaderId::kTransferEncoding)) {
            full->headers.set(header::kContentLength,
                              std::to_string(full->content.readable_bytes()));
          }
        }
      }
    }
  } else if (auto* head = msg.try_get<HttpResponse>()) {
    if (head->status.code >= 200) {
      const Pending request = next_request();
      in_streamed_response_ = true;
      streaming_ = nullptr;
      std::size_t announced = SIZE_MAX;  // unknown: compress
      if (auto length = head->headers.get(HeaderId::kContentLength)) {
        announced = 0;
        for (char c : *length) {
          if (c < '0' || c > '9' || announced > SIZE_MAX / 10 - 10) break;
          announced = announced * 10 + static_cast<std::size_t>(c - '0');
        }
      }
      const ContentCoding coding =
          head->version == kHttp10 ? ContentCoding::kIdentity
                                   : choose(request, head->status.code, head->headers, announced);
      if (coding != ContentCoding::kIdentity) {
        streaming_ = &compressor(coding);
        dirty_ = false;
        mark_encoded(head->headers, coding);
        head->headers.remove(header::kContentLength);
        if (!head->headers.contains_token(HeaderId::kTransferEncoding, "chunked")) {
          head->headers.add(HeaderId::kTransferEncoding, "chunked");
        }
      }
    }
  } else if (in_streamed_response_) {
    if (auto* piece = msg.try_get<HttpContent>()) {
      if (streaming_ != nullptr && piece->content.is_readable()) {
        ByteBuf out = ctx.alloc().buffer(piece->content.readable_bytes() / 2 + 64);
        streaming_->compress(piece->content.readable_span(), codec::StreamCompressor::Op::kProcess,
                             out);
        piece->content = std::move(out);
        dirty_ = true;
      }
    } else if (auto* last = msg.try_get<LastHttpContent>()) {
      if (streaming_ != nullptr) {
        ByteBuf out = ctx.alloc().buffer(last->content.readable_bytes() / 2 + 64);
        streaming_->compress(last->content.readable_span(), codec::StreamCompressor::Op::kFinish,
                             out);
        last->content = std::move(out);
      }
      streaming_ = nullptr;
      in_streamed_response_ = false;
      dirty_ = false;
    } else if (streaming_ != nullptr && msg.is<FileRegion>()) {
      throw codec::EncoderError("HttpContentCompressor cannot compress a FileRegion body");
    }
  }
  ctx.write(std::move(msg), std::move(promise));
}

void HttpContentCompressor::flush(ChannelHandlerContext& ctx) {
  if (streaming_ != nullptr && dirty_) {
    dirty_ = false;
    ByteBuf out = ctx.alloc().buffer(256);
    streaming_->compress({}, codec::StreamCompressor::Op::kFlush, out);
    ctx.write(Message(HttpContent{std::move(out)}));
  }
  ctx.flush();
}

}  // namespace trellis::http
