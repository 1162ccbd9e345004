// Aggregation of HTTP messages (see http_object_aggregator.hpp).
#include <trellis/codec/http/http_object_aggregator.hpp>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

#include "http_expectation.hpp"

namespace trellis::http {

void HttpObjectAggregator::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (auto* head = msg.try_get<HttpRequest>()) {
    response_.reset();
    request_.reset();
    reset_body();
    discarding_ = false;
    // A body announced over the limit is refused before any of it is read (and, with
    // 100-continue, before it is invited); then, as Netty's aggregator, the expectation is
    // answered here.
    const std::int64_t length = detail::content_length_of(head->headers);
    if (length > 0 && static_cast<std::uint64_t>(length) > max_content_length_) {
      discarding_ = true;
      detail::refuse(ctx, 413);
      return;
    }
    if (!detail::answer_expectation(ctx, head->version, head->headers)) {
      discarding_ = true;
      return;
    }
    announced_ = length;
    request_ = msg.take<HttpRequest>();
    return;
  }
  if (auto* full = msg.try_get<FullHttpRequest>()) {
    // Already whole (a bodiless request from the decoder): only its expectation, if any.
    if (full->headers.contains(HeaderId::kExpect) &&
        !detail::answer_expectation(ctx, full->version, full->headers)) {
      return;
    }
    ctx.fire_channel_read(std::move(msg));
    return;
  }
  if (pass_responses_ && !response_ && !request_ && !discarding_) {
    ctx.fire_channel_read(std::move(msg));
    return;
  }
  if (msg.is<HttpResponse>()) {
    response_ = msg.take<HttpResponse>();
    request_.reset();
    reset_body();
    announced_ = detail::content_length_of(response_->headers);
    discarding_ = false;
    return;
  }
  const bool content = msg.is<HttpContent>();
  const bool last = msg.is<LastHttpContent>();
  if (!content && !last) {
    ctx.fire_channel_read(std::move(msg));
    return;
  }
  if (discarding_) {
    if (last) discarding_ = false;
    return;
  }
  if (!request_ && !response_) {
    ctx.fire_channel_read(std::move(msg));  // content without a head we aggregate: not ours
    return;
  }
  if (content) {
    append(ctx, std::move(msg.get<HttpContent>().content));
    return;
  }
  auto& tail = msg.get<LastHttpContent>();
  append(ctx, std::move(tail.content));
  if (discarding_) {  // the last piece itself went over the limit
    discarding_ = false;
    return;
  }
  if (request_) {
    FullHttpRequest full{std::move(request_->method),
                         std::move(request_->target),
                         request_->version,
                         std::move(request_->headers),
                         take_body(ctx),
                         std::move(tail.trailers)};
    request_.reset();
    ctx.fire_channel_read(Message(std::move(full)));
  } else {
    FullHttpResponse full{response_->version, std::move(response_->status),
                          std::move(response_->headers), take_body(ctx), std::move(tail.trailers)};
    response_.reset();
    ctx.fire_channel_read(Message(std::move(full)));
  }
}

void HttpObjectAggregator::append(ChannelHandlerContext& ctx, ByteBuf piece) {
  if (!piece.is_readable()) return;
  size_ += piece.readable_bytes();
  if (size_ > max_content_length_) {
    oversized(ctx);
    return;
  }
  if (!body_.is_readable() && !body_owned_) {
    body_ = std::move(piece);  // the usual case, a body in one piece: held as it came
    return;
  }
  if (!body_owned_) {
    // A second piece: from here on the pieces are copied, so that none of them keeps the
    // (possibly much larger) receive buffer it was sliced from. The copy is sized for the
    // announced length when there is one, and can never grow past the limit.
    std::size_t initial = size_;
    if (announced_ > 0) initial = std::max(initial, static_cast<std::size_t>(announced_));
    ByteBuf copy = ctx.alloc().buffer(std::min(initial, max_content_length_), max_content_length_);
    copy.write_bytes(body_);
    body_ = std::move(copy);
    body_owned_ = true;
  }
  body_.write_bytes(piece);
}

ByteBuf HttpObjectAggregator::take_body(ChannelHandlerContext&) {
  ByteBuf body = std::move(body_);
  reset_body();
  return body;
}

void HttpObjectAggregator::reset_body() noexcept {
  body_ = ByteBuf();
  body_owned_ = false;
  announced_ = -1;
  size_ = 0;
}

void HttpObjectAggregator::oversized(ChannelHandlerContext& ctx) {
  reset_body();
  discarding_ = true;
  if (request_) {
    request_.reset();
    detail::refuse(ctx, 413);
    return;
  }
  response_.reset();
  ctx.fire_exception_caught(std::make_exception_ptr(codec::TooLongFrameError(
      "response body larger than " + std::to_string(max_content_length_) + " bytes")));
}

void HttpObjectAggregator::channel_inactive(ChannelHandlerContext& ctx) {
  request_.reset();
  response_.reset();
  reset_body();
  ctx.fire_channel_inactive();
}

}  // namespace trellis::http
