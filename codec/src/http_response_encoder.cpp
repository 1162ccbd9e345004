// The HTTP encoders (see http_response_encoder.hpp).
#include <trellis/codec/http/http_response_encoder.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/codec/http/http_date.hpp>
#include <trellis/codec/http/http_head_writer.hpp>
#include <trellis/codec/http/http_refusal.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/pipeline/event_executor.hpp>
#include <trellis/pipeline/file_region.hpp>

namespace trellis::http {

namespace {
std::size_t head_size_hint(const HttpHeaders& headers) {
  std::size_t n = 64;
  for (const auto f : headers) n += f.name.size() + f.value.size() + 4;
  return n;
}

[[noreturn]] void throw_unsafe() {
  throw codec::EncoderError(
      "header field name that is not a token, or value with CR, LF or NUL (message splitting "
      "refused)");
}

void check_safe(const HttpHeaders& headers) {
  if (has_unsafe_field(headers)) throw_unsafe();
}

// reason-phrase = *( HTAB / SP / VCHAR / obs-text ) (RFC 9112 §4): a CR or LF an application
// echoed into a custom reason would split the response.
void check_reason(std::string_view reason) {
  for (const char c : reason) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) {
      throw codec::EncoderError(
          "reason phrase with CR, LF, NUL or another control (response splitting refused)");
    }
  }
}

bool is_chunked(const HttpHeaders& headers) {
  return headers.contains_token(HeaderId::kTransferEncoding, "chunked");
}

// Writes a head and a body flushed together: a small body is copied into the head's buffer, a
// larger one goes as a second message, so the transport sends both with one gathering write and
// the body is not copied. Both ByteBufs travel inline in their Messages (a CompositeByteBuf
// would not fit and would cost an allocation per message).
void write_head_and_body(ChannelHandlerContext& ctx, ByteBuf head, ByteBuf body,
                         ChannelPromise promise) {
  if (body.readable_bytes() <= kCopyBodyThreshold) {
    if (body.is_readable()) head.write_bytes(body);
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
  } else if (auto* region = msg.try_get<FileRegion>()) {
    if (mode == Mode::kSkip) {
      promise.try_set_value();  // the body of a HEAD or 304 answer is not sent
      return;
    }
    if (mode == Mode::kChunked && region->remaining() > 0) {
      ByteBuf header = ctx.alloc().buffer(20);
      write_chunk_header(header, region->remaining());
      ctx.write(Message(std::move(header)));
      ctx.write(std::move(msg));
      ByteBuf end = ctx.alloc().buffer(2);
      write_chunk_end(end);
      ctx.write(Message(std::move(end)), std::move(promise));
      return;
    }
    out = std::move(msg);
  } else {
    out = std::move(msg);  // not an HTTP body piece: pass it on untouched
  }
  ctx.write(std::move(out), std::move(promise));
}

bool HttpResponseEncoder::answering_head() {
  // A 1xx response does not answer the request: the final response still will.
  return !methods_.empty() && methods_.front() == HttpMethod::kHead;
}

std::int64_t HttpResponseEncoder::date_clock(ChannelHandlerContext& ctx) {
  if (batch_nanos_ >= 0) return batch_nanos_;
  const std::int64_t now = ctx.executor().coarse_time_nanos();
  if (in_read_batch_) batch_nanos_ = now;
  return now;
}

void HttpResponseEncoder::encode_head(ChannelHandlerContext& ctx, ByteBuf& out, HttpVersion version,
                                      const HttpResponseStatus& status, const HttpHeaders& headers,
                                      const ByteBuf* full_body, const ByteBuf* inline_body,
                                      std::size_t min_capacity) {
  // One pass: room for the most the head can take, then the fields are written and looked at
  // together. The fields the encoder adds are written, not added to the message.
  std::string_view standard_line;
  if (status.reason.empty()) {
    standard_line = standard_status_line(version, status.code);
  } else {
    check_reason(status.reason);  // before anything is written; the standard line needs none
  }
  const std::string_view reason = standard_line.empty() ? status.reason_phrase() : "";
  const std::size_t body_bytes = inline_body ? inline_body->readable_bytes() : 0;
  constexpr std::size_t kDateLine = 64;    // "Date: " + 29 characters (or more) + CRLF
  constexpr std::size_t kLengthLine = 40;  // "Content-Length: " + up to 20 digits + CRLF
  const std::size_t bound = (standard_line.empty() ? 24 + reason.size() : standard_line.size()) +
                            headers.wire_size_bound() + kDateLine + kLengthLine + 2 + body_bytes;
  if (out.writable_bytes() < bound) {
    // Held responses that leave too little room go on (unflushed) and a new buffer takes the
    // next ones: a gathering write sends them together, where growing would copy them.
    if (out.is_readable()) ctx.write(Message(std::move(out)));
    out = ctx.alloc().buffer(std::max(bound, min_capacity));
  }
  char* const start = reinterpret_cast<char*>(out.writable_span().data());
  char* p = start;
  if (!standard_line.empty()) {
    p = put_text(p, standard_line);
  } else {
    p = put_text(p, version.text());
    *p++ = ' ';
    p = std::to_chars(p, p + 8, status.code).ptr;
    *p++ = ' ';
    p = put_text(p, reason);
    p = put_text(p, "\r\n");
  }
  FieldsSummary fields;
  p = put_fields(p, headers, fields);
  if (fields.unsafe) throw_unsafe();  // nothing counts until the writer index moves
  if (options_.add_date_header && status.code >= 200 && !fields.has_date) {
    const auto line = HttpDateCache::for_this_thread().field_line(date_clock(ctx));
    if (line.size() > kDateLine) throw codec::EncoderError("Date header longer than expected");
    p = put_text(p, line);
  }
  if (full_body && options_.add_content_length && !status_has_no_body(status.code) &&
      !fields.has_content_length && !fields.has_transfer_encoding) {
    // For HEAD too: the length the body would have had (RFC 9110 §9.3.2); the body is dropped.
    p = put_text(p, "Content-Length: ");
    p = std::to_chars(p, p + 20, full_body->readable_bytes()).ptr;
    p = put_text(p, "\r\n");
  }
  p = put_text(p, "\r\n");
  if (body_bytes > 0) {
    const auto body = inline_body->readable_span();
    p = put_text(p, std::string_view(reinterpret_cast<const char*>(body.data()), body.size()));
  }
  out.set_writer_index(out.writer_index() + static_cast<std::size_t>(p - start));
}

void HttpResponseEncoder::write_held(ChannelHandlerContext& ctx) {
  if (held_.is_readable()) {
    ctx.write(Message(std::move(held_)));
  } else if (held_.data() != nullptr) {
    held_ = ByteBuf();  // a buffer left empty by a refused response: nothing to send
  }
}

void HttpResponseEncoder::flush(ChannelHandlerContext& ctx) {
  write_held(ctx);
  ctx.flush();
}

void HttpResponseEncoder::close(ChannelHandlerContext& ctx, ChannelPromise promise) {
  write_held(ctx);
  ctx.close(std::move(promise));
}

void HttpResponseEncoder::disconnect(ChannelHandlerContext& ctx, ChannelPromise promise) {
  write_held(ctx);
  ctx.disconnect(std::move(promise));
}

void HttpResponseEncoder::handler_removed(ChannelHandlerContext& ctx) { write_held(ctx); }

void HttpResponseEncoder::write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  write_message(ctx, msg, promise);
}

void HttpResponseEncoder::write_message(ChannelHandlerContext& ctx, Message& msg,
                                        ChannelPromise& promise) {
  // The responses are encoded where they are, in the message (not moved out of it).
  if (msg.is<FullHttpResponse>()) {
    auto& response = msg.get<FullHttpResponse>();
    const bool head_request = answering_head();
    const auto code = response.status.code;
    if (code >= 200 && !methods_.empty()) methods_.pop_front();
    const bool no_body = status_has_no_body(code) || head_request;
    const bool chunked = !no_body && is_chunked(response.headers);
    const std::size_t body_bytes = response.content.readable_bytes();
    const bool inline_body = !no_body && !chunked && body_bytes <= kCopyBodyThreshold;
    if ((no_body || inline_body) && promise.is_void()) {
      // One buffer and nobody waits for it: held with the others until the flush.
      encode_head(ctx, held_, response.version, response.status, response.headers,
                  &response.content, inline_body ? &response.content : nullptr, kHeldBufferSize);
      return;
    }
    write_held(ctx);
    ByteBuf head;
    encode_head(ctx, head, response.version, response.status, response.headers, &response.content,
                inline_body ? &response.content : nullptr);
    if (no_body || inline_body) {
      ctx.write(Message(std::move(head)), std::move(promise));
      return;
    }
    if (chunked) {
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
    const auto& response = msg.get<HttpResponse>();
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
    write_held(ctx);
    ByteBuf head;
    encode_head(ctx, head, response.version, response.status, response.headers, nullptr, nullptr);
    ctx.write(Message(std::move(head)), std::move(promise));
    return;
  }
  if (const auto* refusal = msg.try_get<HttpRefusal>()) {
    // Without an HttpServerCodec to keep the order: answered now, and the channel closes once
    // the answer is written.
    if (!promise.is_void()) {
      ctx.channel().close_future().add_listener(
          [promise](const Future<void>&) mutable { promise.try_set_value(); });
    }
    Message response(refusal->response());
    ChannelPromise written = ctx.new_promise();
    auto done = written.future();
    write_message(ctx, response, written);
    done.add_listener([&ctx](const Future<void>&) { ctx.close(); });
    return;
  }
  write_held(ctx);
  framing_.write_content_or_pass(ctx, std::move(msg), std::move(promise));
}

void HttpRequestEncoder::write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  auto write_head = [&](const HttpMethod& method, const std::string& target, HttpVersion version,
                        const HttpHeaders& headers, std::size_t body_bytes) {
    // Nothing is written before every piece of the request line and the fields was checked: a
    // method, target or name that is not what the grammar allows could end the line early and
    // start a second request (request smuggling). The standard methods are tokens already.
    if (method.id() == HttpMethod::kOther && !is_token(method.name())) {
      throw codec::EncoderError("request method that is not a token");
    }
    if (!is_request_target(target)) {
      throw codec::EncoderError("request target empty or with whitespace, controls or non-ASCII");
    }
    check_safe(headers);
    // Room for a body small enough to be copied after the head (see write_head_and_body).
    const std::size_t inline_body = body_bytes <= kCopyBodyThreshold ? body_bytes : 0;
    ByteBuf head = ctx.alloc().buffer(head_size_hint(headers) + target.size() + inline_body);
    write_request_head(head, method, target, version, headers);
    return head;
  };
  if (msg.is<FullHttpRequest>()) {
    auto& request = msg.get<FullHttpRequest>();
    if (request.content.is_readable() && !request.headers.contains(HeaderId::kContentLength) &&
        !request.headers.contains(HeaderId::kTransferEncoding)) {
      request.headers.add(HeaderId::kContentLength,
                          std::to_string(request.content.readable_bytes()));
    }
    const bool chunked = is_chunked(request.headers);
    ByteBuf head = write_head(request.method, request.target, request.version, request.headers,
                              chunked ? 0 : request.content.readable_bytes());
    if (chunked) {
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
    const auto& request = msg.get<HttpRequest>();
    framing_.mode =
        is_chunked(request.headers) ? HttpBodyFraming::Mode::kChunked : HttpBodyFraming::Mode::kRaw;
    ctx.write(
        Message(write_head(request.method, request.target, request.version, request.headers, 0)),
        std::move(promise));
    return;
  }
  framing_.write_content_or_pass(ctx, std::move(msg), std::move(promise));
}

}  // namespace trellis::http
