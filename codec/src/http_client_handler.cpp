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

HttpClientExchange HttpClientHandler::take_exchange() {
  HttpClientExchange exchange = std::move(*exchange_);
  exchange_.reset();
  if (exchange.timer.valid()) exchange.timer.cancel();
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
  // An encoder error (a header with CR/LF, ...) comes back through exception_caught.
  ctx_->write_and_flush(Message(std::move(exchange_->request)));
}

void HttpClientHandler::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (!msg.is<FullHttpResponse>()) return;  // nothing else comes out of the aggregator
  const std::uint16_t code = msg.get<FullHttpResponse>().status.code;
  if (code < 200) return;  // 1xx: interim, the final response follows on the same request
  if (!exchange_) {
    // A response nobody asked for: the connection is out of step with its requests.
    close();
    return;
  }
  FullHttpResponse response = msg.take<FullHttpResponse>();
  const bool reusable = reusable_ && ctx.channel().is_active() && !closed_ &&
                        is_keep_alive(response.version, response.headers);
  HttpClientExchange exchange = take_exchange();
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
  if (exchange_) {
    fail(std::make_exception_ptr(
        ConnectionClosedError(true, "the connection closed before the response arrived")));
  }
  if (auto pool = pool_.lock()) pool->on_closed(this);
  ctx.fire_channel_inactive();
}

}  // namespace trellis::http
