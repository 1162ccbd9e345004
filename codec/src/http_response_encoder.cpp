// The HTTP encoders (see http_response_encoder.hpp).
#include <trellis/codec/http/http_response_encoder.hpp>

#include <charconv>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/codec/http/http_date.hpp>
#include <trellis/codec/http/http_head_writer.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/pipeline/event_executor.hpp>

namespace trellis::http {

namespace {
std::size_t head_size_hint(const HttpHeaders& headers) {
  std::size_t n = 64;
  for (const auto f : headers) n += f.name.size() + f.value.size() + 4;
  return n;
}

void check_safe(const HttpHeaders& headers) {
  if (has_unsafe_field(headers)) {
    throw codec::EncoderError("header field with CR, LF or NUL (response splitting refused)");
  }
}

bool is_chunked(const HttpHeaders& headers) {
  return headers.contains_token(HeaderId::kTransferEncoding, "chunked");
}

// Writes a head and a body as two messages flushed together: the transport sends them with one
// gathering write, the body is not copied, and both ByteBufs travel inline in their Messages (a
// CompositeByteBuf would not fit and would cost an allocation per response).
void write_head_and_body(ChannelHandlerContext& ctx, ByteBuf head, ByteBuf body,
                         ChannelPromise promise) {
  if (!body.is_readable()) {
    ctx.write(Message(std::move(head)), std::move(promise));
    return;
  }
  ctx.write(Message(std::move(head)));
  ctx.write(Message(std::move(body)), std::move(promise));
}
}  // namespace

void HttpBodyFraming::encode_content(ChannelHandlerContext& ctx, ByteBuf content,
                                     const HttpHeaders* trailers, bool last, Message& out) {
  switch (mode) {
    case Mode::kNone:
    case Mode::kSkip:
      if (last) mode = Mode::kNone;
      out = Message(ByteBuf());
      return;
    case Mode::kRaw:
      if (last) mode = Mode::kNone;
      out = Message(std::move(content));
      return;
    case Mode::kChunked: {
      CompositeByteBuf parts;
      if (content.is_readable()) {
        ByteBuf header = ctx.alloc().buffer(20);
        write_chunk_header(header, content.readable_bytes());
        parts.add_component(std::move(header));
        parts.add_component(std::move(content));
        ByteBuf end = ctx.alloc().buffer(2);
        write_chunk_end(end);
        parts.add_component(std::move(end));
      }
      if (last) {
        static const HttpHeaders kNoTrailers;
        const HttpHeaders& t = trailers ? *trailers : kNoTrailers;
        check_safe(t);
        ByteBuf tail = ctx.alloc().buffer(8 + head_size_hint(t));
        write_last_chunk(tail, t);
        parts.add_component(std::move(tail));
        mode = Mode::kNone;
      }
      out = Message(std::move(parts));
      return;
    }
  }
}

void HttpBodyFraming::write_content_or_pass(ChannelHandlerContext& ctx, Message msg,
                                            ChannelPromise promise) {
  Message out;
  if (auto* piece = msg.try_get<HttpContent>()) {
    encode_content(ctx, std::move(piece->content), nullptr, false, out);
  } else if (auto* last = msg.try_get<LastHttpContent>()) {
    encode_content(ctx, std::move(last->content), &*last->trailers, true, out);
  } else {
    out = std::move(msg);  // not an HTTP body piece: pass it on untouched
  }
  ctx.write(std::move(out), std::move(promise));
}

bool HttpResponseEncoder::answering_head() {
  // A 1xx response does not answer the request: the final response still will.
  return !methods_.empty() && methods_.front() == HttpMethod::kHead;
}

ByteBuf HttpResponseEncoder::encode_head(ChannelHandlerContext& ctx, HttpVersion version,
                                         const HttpResponseStatus& status,
                                         const HttpHeaders& headers, const ByteBuf* full_body) {
  check_safe(headers);
  ByteBuf head = ctx.alloc().buffer(head_size_hint(headers) + 64);
  write_status_line(head, version, status);
  write_fields(head, headers);
  // The fields the encoder adds are written, not added to the message: no header storage grows.
  if (options_.add_date_header && status.code >= 200 && !headers.contains(HeaderId::kDate)) {
    write_field(head, header::kDate,
                HttpDateCache::for_this_thread().get(ctx.executor().current_time_nanos()));
  }
  if (full_body && options_.add_content_length && !status_has_no_body(status.code) &&
      !headers.contains(HeaderId::kContentLength) &&
      !headers.contains(HeaderId::kTransferEncoding)) {
    // For HEAD too: the length the body would have had (RFC 9110 §9.3.2); the body is dropped.
    char digits[24];
    auto r = std::to_chars(digits, digits + sizeof digits, full_body->readable_bytes());
    write_field(head, header::kContentLength,
                std::string_view(digits, static_cast<std::size_t>(r.ptr - digits)));
  }
  head.write_string("\r\n");
  return head;
}

void HttpResponseEncoder::write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  if (msg.is<FullHttpResponse>()) {
    auto response = msg.take<FullHttpResponse>();
    const bool head_request = answering_head();
    const auto code = response.status.code;
    if (code >= 200 && !methods_.empty()) methods_.pop_front();
    ByteBuf head =
        encode_head(ctx, response.version, response.status, response.headers, &response.content);
    if (status_has_no_body(code) || head_request) {
      ctx.write(Message(std::move(head)), std::move(promise));
      return;
    }
    if (is_chunked(response.headers)) {
      framing_.mode = HttpBodyFraming::Mode::kChunked;
      Message body;
      framing_.encode_content(ctx, std::move(response.content), &*response.trailers, true, body);
      ctx.write(Message(std::move(head)));
      ctx.write(std::move(body), std::move(promise));
      return;
    }
    write_head_and_body(ctx, std::move(head), std::move(response.content), std::move(promise));
    return;
  }
  if (msg.is<HttpResponse>()) {
    auto response = msg.take<HttpResponse>();
    const bool head_request = answering_head();
    const auto code = response.status.code;
    if (code >= 200 && !methods_.empty()) methods_.pop_front();
    if (status_has_no_body(code) || head_request) {
      framing_.mode = HttpBodyFraming::Mode::kSkip;
    } else if (is_chunked(response.headers)) {
      framing_.mode = HttpBodyFraming::Mode::kChunked;
    } else {
      framing_.mode = HttpBodyFraming::Mode::kRaw;
    }
    ByteBuf head = encode_head(ctx, response.version, response.status, response.headers, nullptr);
    ctx.write(Message(std::move(head)), std::move(promise));
    return;
  }
  framing_.write_content_or_pass(ctx, std::move(msg), std::move(promise));
}

void HttpRequestEncoder::write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  auto write_head = [&](const HttpMethod& method, const std::string& target, HttpVersion version,
                        const HttpHeaders& headers) {
    check_safe(headers);
    for (char c : target) {
      if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
        throw codec::EncoderError("request target with whitespace or control characters");
      }
    }
    ByteBuf head = ctx.alloc().buffer(head_size_hint(headers) + target.size());
    write_request_head(head, method, target, version, headers);
    return head;
  };
  if (msg.is<FullHttpRequest>()) {
    auto request = msg.take<FullHttpRequest>();
    if (request.content.is_readable() && !request.headers.contains(HeaderId::kContentLength) &&
        !request.headers.contains(HeaderId::kTransferEncoding)) {
      request.headers.add(HeaderId::kContentLength,
                          std::to_string(request.content.readable_bytes()));
    }
    ByteBuf head = write_head(request.method, request.target, request.version, request.headers);
    if (is_chunked(request.headers)) {
      framing_.mode = HttpBodyFraming::Mode::kChunked;
      Message body;
      framing_.encode_content(ctx, std::move(request.content), &*request.trailers, true, body);
      ctx.write(Message(std::move(head)));
      ctx.write(std::move(body), std::move(promise));
      return;
    }
    write_head_and_body(ctx, std::move(head), std::move(request.content), std::move(promise));
    return;
  }
  if (msg.is<HttpRequest>()) {
    auto request = msg.take<HttpRequest>();
    framing_.mode =
        is_chunked(request.headers) ? HttpBodyFraming::Mode::kChunked : HttpBodyFraming::Mode::kRaw;
    ctx.write(Message(write_head(request.method, request.target, request.version, request.headers)),
              std::move(promise));
    return;
  }
  framing_.write_content_or_pass(ctx, std::move(msg), std::move(promise));
}

}  // namespace trellis::http
