// HttpClientHandler (see http_client_handler.hpp).
#include <trellis/codec/http/http_client_handler.hpp>

#include <string>

#include <trellis/codec/http/http_client_errors.hpp>
#include <trellis/codec/http/http_connection_pool.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>

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
}  // namespace

bool HttpClientHandler::is_active() const noexcept {
  return ctx_ && !closed_ && ctx_->channel().is_active();
}

Channel* HttpClientHandler::channel() const noexcept { return ctx_ ? &ctx_->channel() : nullptr; }

HttpClientHandler::~HttpClientHandler() {
  if (continue_timer_.valid()) continue_timer_.cancel();
}

void HttpClientHandler::send_held_body() {
  if (!awaiting_continue_) return;
  awaiting_continue_ = false;
  if (continue_timer_.valid()) continue_timer_.cancel();
  if (ctx_ && !closed_) ctx_->write_and_flush(Message(LastHttpContent{std::move(held_body_), {}}));
}

HttpClientExchange HttpClientHandler::take_exchange() {
  HttpClientExchange exchange = std::move(*exchange_);
  exchange_.reset();
  if (exchange.timer.valid()) exchange.timer.cancel();
  if (awaiting_continue_) {
    // A final answer before the body was sent: the server may still wait for it, so the
    // connection is not in a state to carry another request.
    awaiting_continue_ = false;
    reusable_ = false;
    held_body_ = ByteBuf();
    if (continue_timer_.valid()) continue_timer_.cancel();
  }
  return exchange;
}

void HttpClientHandler::fail(std::exception_ptr error) {
  if (!exchange_) return;
  take_exchange().promise.try_set_exception(std::move(error));
}

void HttpClientHandler::send(HttpClientExchange exchange) {
  if (!is_active()) {
    if (exchange.timer.valid()) exchange.timer.cancel();
    exchange.promise.try_set_exception(std::make_exception_ptr(
        ConnectionClosedError(false, "the connection closed before the request was sent")));
    return;
  }
  reusable_ = is_keep_alive(exchange.request.version, exchange.request.headers);
  exchange_.emplace(std::move(exchange));
  FullHttpRequest& request = exchange_->request;
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
  if (!msg.is<FullHttpResponse>()) return;  // nothing else comes out of the aggregator
  const std::uint16_t code = msg.get<FullHttpResponse>().status.code;
  if (code < 200) {
    // 1xx: interim, the final response follows on the same request.
    if (code == 100) send_held_body();
    return;
  }
  if (!exchange_) {
    // A response nobody asked for: the connection is out of step with its requests.
    close();
    return;
  }
  FullHttpResponse response = msg.take<FullHttpResponse>();
  HttpClientExchange exchange = take_exchange();  // (a body still held makes it not reusable)
  const bool reusable = reusable_ && ctx.channel().is_active() && !closed_ &&
                        is_keep_alive(response.version, response.headers);
  // The connection goes back first, so that a continuation that sends the next request at once
  // (a coroutine resumed inline below) finds it idle.
  if (auto pool = pool_.lock()) {
    pool->on_released(this, reusable);
  } else if (!reusable) {
    close();
  }
  exchange.promise.try_set_value(std::move(response));
}

void HttpClientHandler::exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) {
  if (exchange_) {
    if (!ctx.channel().is_active()) {
      // The end of the stream cut the response short (the decoder reports it at the close).
      error = std::make_exception_ptr(ConnectionClosedError(
          true,
          "the connection closed before the response was complete (" + describe(error) + ")"));
    }
    fail(std::move(error));
  }
  // Whatever went wrong, this connection is not in a state to carry another request.
  close();
}

void HttpClientHandler::abort(std::exception_ptr error) {
  fail(std::move(error));
  close();
}

void HttpClientHandler::close() {
  if (ctx_ && ctx_->channel().is_open()) ctx_->channel().close();
}

void HttpClientHandler::channel_inactive(ChannelHandlerContext& ctx) {
  closed_ = true;
  awaiting_continue_ = false;
  if (continue_timer_.valid()) continue_timer_.cancel();
  if (exchange_) {
    fail(std::make_exception_ptr(
        ConnectionClosedError(true, "the connection closed before the response arrived")));
  }
  if (auto pool = pool_.lock()) pool->on_closed(this);
  ctx.fire_channel_inactive();
}

}  // namespace trellis::http
