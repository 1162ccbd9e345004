// Aggregation of HTTP messages (see http_object_aggregator.hpp).
#include <trellis/codec/http/http_object_aggregator.hpp>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

namespace trellis::http {

void HttpObjectAggregator::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (msg.is<HttpRequest>()) {
    request_ = msg.take<HttpRequest>();
    response_.reset();
    pieces_.clear();
    size_ = 0;
    discarding_ = false;
    return;
  }
  if (msg.is<HttpResponse>()) {
    response_ = msg.take<HttpResponse>();
    request_.reset();
    pieces_.clear();
    size_ = 0;
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
  pieces_.push_back(std::move(piece));
}

ByteBuf HttpObjectAggregator::take_body(ChannelHandlerContext& ctx) {
  ByteBuf body;
  if (pieces_.size() == 1) {
    body = std::move(pieces_.front());  // the usual case: no copy
  } else if (pieces_.size() > 1) {
    body = ctx.alloc().buffer(size_);
    for (auto& p : pieces_) body.write_bytes(p);
  }
  pieces_.clear();
  size_ = 0;
  return body;
}

void HttpObjectAggregator::oversized(ChannelHandlerContext& ctx) {
  pieces_.clear();
  size_ = 0;
  discarding_ = true;
  if (request_) {
    request_.reset();
    FullHttpResponse response;
    response.status.code = 413;
    response.headers.add(HeaderId::kConnection, "close");
    response.headers.add(HeaderId::kContentLength, "0");
    auto done = ctx.new_promise();
    ctx.write_and_flush(Message(std::move(response)), done);
    done.future().add_listener(
        [&channel = ctx.channel()](const Future<void>&) { channel.close(); });
    return;
  }
  response_.reset();
  ctx.fire_exception_caught(std::make_exception_ptr(codec::TooLongFrameError(
      "response body larger than " + std::to_string(max_content_length_) + " bytes")));
}

void HttpObjectAggregator::channel_inactive(ChannelHandlerContext& ctx) {
  request_.reset();
  response_.reset();
  pieces_.clear();
  size_ = 0;
  ctx.fire_channel_inactive();
}

}  // namespace trellis::http
