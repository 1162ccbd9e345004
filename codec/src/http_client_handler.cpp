// HttpClientHandler (see http_client_handler.hpp).
#include <trellis/codec/http/http_client_handler.hpp>

#include <algorithm>
#include <string>
#include <system_error>

#include <trellis/codec/http/http_client_errors.hpp>
#include <trellis/codec/http/http_connection_pool.hpp>
#include <trellis/codec/http/http_object_aggregator.hpp>
#include <trellis/codec/http/http_server_codec.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_config.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/pipeline/error.hpp>

namespace trellis::http {

namespace {
std::string describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

// The peer reset the connection (or it was reset under a write): what a client sees when it
// reuses a connection the server has just closed.
bool is_reset(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const IoError& e) {
    return e.code() == std::errc::connection_reset || e.code() == std::errc::broken_pipe;
  } catch (...) {
    return false;
  }
}
}  // namespace

void HttpClientExchange::fail(std::exception_ptr error) {
  if (timer.valid()) timer.cancel();
  if (!streaming) {
    promise.try_set_exception(std::move(error));
  } else if (stream) {
    stream->fail(std::move(error));  // the head was delivered: the body ends with the error
  } else if (stream_promise) {
    stream_promise->try_set_exception(std::move(error));
  }
}

bool HttpClientHandler::is_active() const noexcept {
  return ctx_ && !closed_ && ctx_->channel().is_active();
}

bool HttpClientHandler::unsolicited_bytes() const noexcept {
  return in_flight_.empty() && codec_ && codec_->inbound_bytes() != inbound_mark_;
}

bool HttpClientHandler::usable() const noexcept { return is_active() && !unsolicited_bytes(); }

Channel* HttpClientHandler::channel() const noexcept { return ctx_ ? &ctx_->channel() : nullptr; }

HttpClientHandler::~HttpClientHandler() {
  if (continue_timer_.valid()) continue_timer_.cancel();
  if (read_timer_.valid()) read_timer_.cancel();
  for (auto& exchange : in_flight_) {
    exchange.fail(std::make_exception_ptr(
        ConnectionClosedError(true, "the connection was released with the request in flight")));
  }
}

void HttpClientHandler::handler_added(ChannelHandlerContext& ctx) {
  ctx_ = &ctx;
  aggregator_ = ctx.pipeline().get<HttpObjectAggregator>("http-aggregator").get();
  codec_ = ctx.pipeline().get<HttpClientCodec>("http-codec").get();
}

bool HttpClientHandler::stale() const noexcept {
  if (completed_ == 0 || response_started_) return false;
  if (codec_ && codec_->inbound_bytes() != inbound_mark_) return false;
  return !(aggregator_ && aggregator_->in_response());
}

bool HttpClientHandler::can_pipeline(std::size_t depth) const noexcept {
  if (in_flight_.size() >= depth || !reusable_ || server_closing_ || awaiting_continue_ ||
      !is_active()) {
    return false;
  }
  return in_flight_.empty() || !in_flight_.back().streaming;
}

bool HttpClientHandler::carries(std::uint64_t id) const noexcept {
  for (const auto& exchange : in_flight_)
    if (exchange.id == id) return true;
  return false;
}

void HttpClientHandler::send_held_body() {
  if (!awaiting_continue_) return;
  awaiting_continue_ = false;
  if (continue_timer_.valid()) continue_timer_.cancel();
  if (ctx_ && !closed_) ctx_->write_and_flush(Message(LastHttpContent{std::move(held_body_), {}}));
}

HttpClientExchange HttpClientHandler::take_front() {
  HttpClientExchange exchange = std::move(in_flight_.front());
  in_flight_.pop_front();
  response_started_ = false;
  if (exchange.timer.valid()) exchange.timer.cancel();
  if (awaiting_continue_ && in_flight_.empty()) {
    // (The request holding its body is always the last in flight: nothing is pipelined behind
    // it.) A final answer before the body was sent: the server may still wait for it, so the
    // connection is not in a state to carry another request.
    awaiting_continue_ = false;
    reusable_ = false;
    held_body_ = ByteBuf();
    if (continue_timer_.valid()) continue_timer_.cancel();
  }
  return exchange;
}

void HttpClientHandler::update_aggregation() {
  if (aggregator_) {
    aggregator_->set_pass_responses(!in_flight_.empty() && in_flight_.front().streaming);
  }
}

void HttpClientHandler::send(HttpClientExchange exchange) {
  if (!is_active()) {
    exchange.fail(std::make_exception_ptr(
        ConnectionClosedError(false, "the connection closed before the request was sent")));
    return;
  }
  if (!is_keep_alive(exchange.request.version, exchange.request.headers)) reusable_ = false;
  if (in_flight_.empty() && read_timeout_.count() > 0) {
    // The read deadline counts from the request's write while nothing else is awaited.
    last_read_ = ctx_->executor().current_time_nanos();
    arm_read_timer();
  }
  in_flight_.push_back(std::move(exchange));
  if (in_flight_.size() == 1) update_aggregation();
  HttpClientExchange& sent = in_flight_.back();
  FullHttpRequest& request = sent.request;
  if (request.content.is_readable() &&
      request.headers.contains_token(HeaderId::kExpect, "100-continue")) {
    // The head now, the body after the 100 Continue.
    HttpRequest head{std::move(request.method), std::move(request.target), request.version,
                     std::move(request.headers)};
    if (!head.headers.contains(HeaderId::kContentLength) &&
        !head.headers.contains(HeaderId::kTransferEncoding)) {
      head.headers.add(HeaderId::kContentLength, std::to_string(request.content.readable_bytes()));
    }
    held_body_ = std::move(request.content);
    awaiting_continue_ = true;
    // The timer dies with the handler (cancelled in the destructor, on this loop).
    continue_timer_ = ctx_->executor().schedule(kContinueTimeout, [this] { send_held_body(); });
    ctx_->write_and_flush(Message(std::move(head)));
    return;
  }
  // An encoder error (a header with CR/LF, ...) comes back through exception_caught.
  ctx_->write_and_flush(Message(std::move(request)));
}

void HttpClientHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (msg.is<FullHttpResponse>()) {
    on_full_response(ctx, msg.take<FullHttpResponse>());
  } else if (msg.is<HttpResponse>()) {
    on_head(msg.take<HttpResponse>());
  } else if (msg.is<HttpContent>()) {
    if (!interim_ && !in_flight_.empty() && in_flight_.front().stream) {
      in_flight_.front().stream->push(std::move(msg.get<HttpContent>().content));
    }
  } else if (msg.is<LastHttpContent>()) {
    on_last(ctx, std::move(msg.get<LastHttpContent>().content));
  }
}

void HttpClientHandler::channel_read_complete(ChannelHandlerContext& ctx) {
  if (!in_flight_.empty()) {
    if (read_timer_armed_) last_read_ = ctx.executor().current_time_nanos();
  } else if (unsolicited_bytes()) {
    // Bytes with no request in flight: whatever they are, they must not be read as the response
    // to the next request.
    close();
  }
  ctx.fire_channel_read_complete();
}

void HttpClientHandler::arm_read_timer() {
  if (read_timer_armed_ || !ctx_ || closed_) return;
  read_timer_armed_ = true;
  const std::int64_t delay =
      last_read_ + read_timeout_.count() - ctx_->executor().current_time_nanos();
  // The timer dies with the handler (cancelled in the destructor, on this loop).
  read_timer_ = ctx_->executor().schedule(
      std::chrono::nanoseconds(std::max<std::int64_t>(0, delay)), [this] { on_read_timer(); });
}

void HttpClientHandler::on_read_timer() {
  read_timer_armed_ = false;
  if (in_flight_.empty() || closed_ || !ctx_) return;
  const std::int64_t now = ctx_->executor().current_time_nanos();
  // A connection that does not read because the application has not taken the chunks of a
  // streamed body waits for the application, not for the server.
  if (!ctx_->channel().config().auto_read()) last_read_ = now;
  if (now - last_read_ < read_timeout_.count()) {
    arm_read_timer();
    return;
  }
  abort(in_flight_.front().id, std::make_exception_ptr(TimeoutError(
                                   TimeoutError::Phase::kRead,
                                   "no byte of the response arrived for " +
                                       std::to_string(read_timeout_.count() / 1000000) + " ms")));
}

void HttpClientHandler::on_full_response(ChannelHandlerContext& ctx, FullHttpResponse response) {
  const std::uint16_t code = response.status.code;
  if (code < 200) {
    // 1xx: interim, the final response follows on the same request.
    if (code == 100) send_held_body();
    return;
  }
  if (in_flight_.empty() || in_flight_.front().streaming) {
    // A response nobody asked for: the connection is out of step with its requests.
    close();
    return;
  }
  response_started_ = true;
  const bool keep_alive = is_keep_alive(response.version, response.headers);
  HttpClientExchange exchange = take_front();  // (a body still held makes it not reusable)
  // The connection goes back first, so that a continuation that sends the next request at once
  // (a coroutine resumed inline below) finds it free.
  finish_front(ctx, keep_alive);
  exchange.promise.try_set_value(std::move(response));
}

void HttpClientHandler::on_head(HttpResponse head) {
  if (head.status.code < 200) {
    interim_ = true;  // its (empty) LastHttpContent ends nothing
    if (head.status.code == 100) send_held_body();
    return;
  }
  if (in_flight_.empty() || !in_flight_.front().streaming || in_flight_.front().stream) {
    close();
    return;
  }
  response_started_ = true;
  HttpClientExchange& exchange = in_flight_.front();
  // request_timeout ends with the head: the body is read at the reader's pace.
  if (exchange.timer.valid()) exchange.timer.cancel();
  if (!is_keep_alive(head.version, head.headers)) server_closing_ = true;
  exchange.stream = std::make_shared<HttpBodyStream>(ctx_->executor(), &ctx_->channel());
  StreamingHttpResponse response;
  response.version = head.version;
  response.status = std::move(head.status);
  response.headers = std::move(head.headers);
  response.body_ = HttpResponseBody(exchange.stream);
  if (exchange.stream_promise) exchange.stream_promise->try_set_value(std::move(response));
}

void HttpClientHandler::on_last(ChannelHandlerContext& ctx, ByteBuf content) {
  if (interim_) {
    interim_ = false;
    return;
  }
  if (in_flight_.empty() || !in_flight_.front().stream) {
    close();
    return;
  }
  HttpClientExchange exchange = take_front();
  exchange.stream->push(std::move(content));
  finish_front(ctx, !server_closing_);
  exchange.stream->finish();
}

void HttpClientHandler::finish_front(ChannelHandlerContext& ctx, bool keep_alive) {
  ++completed_;
  // The response's bytes are taken; what followed it in the same read is still buffered.
  if (codec_) inbound_mark_ = codec_->inbound_bytes() - codec_->buffered_inbound_bytes();
  if (!keep_alive) server_closing_ = true;
  update_aggregation();
  // Bytes beyond the last response awaited (a body on a HEAD, 204 or 304 response, more than
  // its Content-Length, a response to no request) would answer the next request: the connection
  // is not reused.
  const bool reusable = reusable_ && !server_closing_ && ctx.channel().is_active() && !closed_ &&
                        !unsolicited_bytes();
  if (!reusable && !in_flight_.empty()) {
    // Requests pipelined behind a response that ends the connection: a server that said close
    // processes no further request (RFC 9112 §9.6).
    fail_all(std::make_exception_ptr(ConnectionClosedError(
        !server_closing_, "the connection ended before the response to a pipelined request")));
  }
  if (auto pool = pool_.lock()) {
    pool->on_released(this, reusable);
  } else if (!reusable) {
    close();
  }
}

void HttpClientHandler::fail_all(std::exception_ptr front_error) {
  while (!in_flight_.empty()) {
    HttpClientExchange exchange = take_front();
    exchange.fail(front_error);
  }
  update_aggregation();
}

void HttpClientHandler::exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) {
  // A reset, or an error that came with the end of the connection (a TLS stream that ended
  // without close_notify) before any byte of the response: a stale connection. channel_inactive
  // sends its requests again if they may be.
  if (!in_flight_.empty() && stale() && (is_reset(error) || !ctx.channel().is_active())) {
    close();
    return;
  }
  if (!in_flight_.empty()) {
    if (!ctx.channel().is_active()) {
      // The end of the stream cut the response short (the decoder reports it at the close).
      error = std::make_exception_ptr(ConnectionClosedError(
          true,
          "the connection closed before the response was complete (" + describe(error) + ")"));
    }
    response_started_ = true;  // bytes arrived that made no response: not a stale connection
    fail_all(std::move(error));
  }
  // Whatever went wrong, this connection is not in a state to carry another request.
  close();
}

void HttpClientHandler::abort(std::uint64_t id, std::exception_ptr error) {
  const auto others = std::make_exception_ptr(ConnectionClosedError(
      true, "the connection was closed because another request on it failed"));
  while (!in_flight_.empty()) {
    HttpClientExchange exchange = take_front();
    exchange.fail(exchange.id == id ? error : others);
  }
  update_aggregation();
  close();
}

void HttpClientHandler::close() {
  if (ctx_ && ctx_->channel().is_open()) ctx_->channel().close();
}

void HttpClientHandler::channel_inactive(ChannelHandlerContext& ctx) {
  closed_ = true;
  awaiting_continue_ = false;
  if (continue_timer_.valid()) continue_timer_.cancel();
  if (read_timer_armed_) {
    read_timer_armed_ = false;
    read_timer_.cancel();
  }
  auto pool = pool_.lock();
  if (!in_flight_.empty()) {
    // A reused keep-alive connection closed before any byte of the response: the server closed
    // it while idle and never saw the request. The pool sends an idempotent request again.
    if (pool && stale()) {
      trellis::detail::RingBuffer<HttpClientExchange> stale = std::move(in_flight_);
      update_aggregation();
      pool->on_closed(this);
      for (auto& exchange : stale) pool->retry_or_fail(std::move(exchange));
      ctx.fire_channel_inactive();
      return;
    }
    fail_all(std::make_exception_ptr(
        ConnectionClosedError(true, "the connection closed before the response arrived")));
  }
  if (pool) pool->on_closed(this);
  ctx.fire_channel_inactive();
}

}  // namespace trellis::http
