// Persistent-connection handling for servers (see http_server_keep_alive_handler.hpp).
#include <trellis/codec/http/http_server_keep_alive_handler.hpp>

#include <algorithm>

#include <trellis/codec/http/http_response_encoder.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/event_executor.hpp>

namespace trellis::http {

void HttpServerKeepAliveHandler::PendingQueue::push_back(PendingRequest r) {
  if (size_ == ring_.size()) {
    std::vector<PendingRequest> bigger(std::max<std::size_t>(4, ring_.size() * 2));
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    ring_ = std::move(bigger);
    head_ = 0;
  }
  ring_[(head_ + size_) & (ring_.size() - 1)] = r;
  ++size_;
}

void HttpServerKeepAliveHandler::handler_added(ChannelHandlerContext& ctx) {
  if (ctx.channel().is_active()) mark_idle(ctx);
}

void HttpServerKeepAliveHandler::handler_removed(ChannelHandlerContext&) { cancel_idle_timer(); }

void HttpServerKeepAliveHandler::channel_active(ChannelHandlerContext& ctx) {
  mark_idle(ctx);
  ctx.fire_channel_active();
}

void HttpServerKeepAliveHandler::channel_inactive(ChannelHandlerContext& ctx) {
  cancel_idle_timer();
  ctx.fire_channel_inactive();
}

void HttpServerKeepAliveHandler::on_request(HttpVersion version, const HttpHeaders& headers) {
  const bool keep_alive = is_keep_alive(version, headers);
  pending_.push_back({keep_alive, keep_alive && version == kHttp10});
}

void HttpServerKeepAliveHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  in_read_batch_ = true;
  if (auto* r = msg.try_get<HttpRequest>()) {
    idle_since_ = kBusy;
    on_request(r->version, r->headers);
  } else if (auto* f = msg.try_get<FullHttpRequest>()) {
    idle_since_ = kBusy;
    on_request(f->version, f->headers);
  }
  ctx.fire_channel_read(std::move(msg));
}

void HttpServerKeepAliveHandler::channel_read_complete(ChannelHandlerContext& ctx) {
  in_read_batch_ = false;
  if (idle_since_ == kIdleUnstamped) idle_since_ = ctx.executor().coarse_time_nanos();
  ctx.fire_channel_read_complete();
}

void HttpServerKeepAliveHandler::on_response_head(HttpHeaders& headers, std::uint16_t status,
                                                  bool full) {
  if (status < 200) return;  // interim: the final response decides
  const PendingRequest request = pending_.empty() ? PendingRequest{true, false} : pending_.front();
  bool keep_alive = request.keep_alive;
  if (headers.contains_token(HeaderId::kConnection, "close")) keep_alive = false;
  // A body delimited by the connection close ends the connection (RFC 9112 §6.3).
  const bool self_delimited = full || status_has_no_body(status) ||
                              headers.contains(HeaderId::kContentLength) ||
                              headers.contains_token(HeaderId::kTransferEncoding, "chunked");
  if (!self_delimited) keep_alive = false;
  if (!keep_alive) {
    if (!headers.contains_token(HeaderId::kConnection, "close")) {
      headers.set(header::kConnection, "close");
    }
    closing_ = true;
  } else if (request.http10 && !headers.contains(HeaderId::kConnection)) {
    headers.add(HeaderId::kConnection, "keep-alive");
  }
}

void HttpServerKeepAliveHandler::write(ChannelHandlerContext& ctx, Message msg,
                                       ChannelPromise promise) {
  bool ends_response = false;
  if (auto* full = msg.try_get<FullHttpResponse>()) {
    on_response_head(full->headers, full->status.code, true);
    ends_response = full->status.code >= 200;
  } else if (auto* head = msg.try_get<HttpResponse>()) {
    on_response_head(head->headers, head->status.code, false);
    // An interim response is followed by its (empty) last content, which ends nothing.
    interim_ = head->status.code < 200;
  } else if (msg.is<LastHttpContent>()) {
    ends_response = !interim_;
    interim_ = false;
  }
  if (!ends_response) {
    ctx.write(std::move(msg), std::move(promise));
    return;
  }
  if (!pending_.empty()) pending_.pop_front();
  if (closing_) {
    // Nothing after this response is answered: the connection ends with it.
    if (promise.is_void()) promise = ctx.new_promise();
    auto done = promise.future();
    ctx.write(std::move(msg), std::move(promise));
    done.add_listener([&channel = ctx.channel()](const Future<void>&) { channel.close(); });
    return;
  }
  ctx.write(std::move(msg), std::move(promise));
  if (pending_.empty()) mark_idle(ctx);
}

void HttpServerKeepAliveHandler::mark_idle(ChannelHandlerContext& ctx) {
  if (idle_timeout_.count() <= 0 || closing_) return;
  idle_since_ = in_read_batch_ ? kIdleUnstamped : ctx.executor().coarse_time_nanos();
  if (!idle_timer_.valid()) schedule_idle_check(ctx, idle_timeout_);
}

void HttpServerKeepAliveHandler::schedule_idle_check(ChannelHandlerContext& ctx,
                                                     std::chrono::nanoseconds delay) {
  idle_timer_ = ctx.executor().schedule(delay, [this, &ctx] { on_idle_check(ctx); });
}

void HttpServerKeepAliveHandler::on_idle_check(ChannelHandlerContext& ctx) {
  idle_timer_ = {};
  if (closing_) return;
  if (idle_since_ == kIdleUnstamped) {
    // Idle, but the read batch that made it so has not completed (no channel_read_complete
    // came): count from now, which can only close the connection later, never early.
    idle_since_ = ctx.executor().coarse_time_nanos();
  }
  if (idle_since_ == kBusy) {  // a request is in progress: look again a full period later
    schedule_idle_check(ctx, idle_timeout_);
    return;
  }
  const auto idle_for = ctx.executor().coarse_time_nanos() - idle_since_;
  if (idle_for >= idle_timeout_.count()) {
    ctx.close();
    return;
  }
  schedule_idle_check(ctx, std::chrono::nanoseconds(idle_timeout_.count() - idle_for));
}

void HttpServerKeepAliveHandler::cancel_idle_timer() {
  if (idle_timer_.valid()) {
    idle_timer_.cancel();
    idle_timer_ = {};
  }
}

}  // namespace trellis::http
