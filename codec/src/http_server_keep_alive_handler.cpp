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

void HttpServerKeepAliveHandler::on_request(HttpVersion version, const HttpHeaders& headers) {
  const bool keep_alive = is_keep_alive(version, headers);
  pending_.push_back({keep_alive, keep_alive && version == kHttp10});
}

void HttpServerKeepAliveHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (auto* r = msg.try_get<HttpRequest>()) {
    on_request(r->version, r->headers);
  } else if (auto* f = msg.try_get<FullHttpRequest>()) {
    on_request(f->version, f->headers);
  }
  ctx.fire_channel_read(std::move(msg));
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
    done.add_listener([&ctx](const Future<void>&) { ctx.close(); });
    return;
  }
  ctx.write(std::move(msg), std::move(promise));
}

}  // namespace trellis::http
