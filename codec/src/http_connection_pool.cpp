// HttpConnectionPool (see http_connection_pool.hpp).
#include <trellis/codec/http/http_connection_pool.hpp>

#include <algorithm>
#include <system_error>

#include <trellis/codec/http/http_client_errors.hpp>
#include <trellis/codec/http/http_object_aggregator.hpp>
#include <trellis/codec/http/http_server_codec.hpp>
#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_initializer.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>

namespace trellis::http {

// A connection being made: its handler, its connect deadline, and whether it already gave up.
struct HttpConnectionPool::Attempt {
  std::shared_ptr<HttpClientHandler> handler;
  ScheduledFuture<void> timer;
  bool timed_out = false;
};

HttpConnectionPool::HttpConnectionPool(EventExecutor& loop, std::string authority,
                                       HttpClientOptions options, Connector connector)
    : loop_(loop),
      authority_(std::move(authority)),
      options_(options),
      connector_(std::move(connector)) {}

HttpConnectionPool::~HttpConnectionPool() {
  if (idle_timer_.valid()) idle_timer_.cancel();
  for (auto& exchange : waiting_)
    if (exchange.timer.valid()) exchange.timer.cancel();
  for (auto& attempt : attempts_)
    if (attempt->timer.valid()) attempt->timer.cancel();
}

void HttpConnectionPool::submit(FullHttpRequest request, Promise<FullHttpResponse> promise) {
  if (closed_) {
    promise.try_set_exception(
        std::make_exception_ptr(ClosedChannelError("the HTTP client is closed")));
    return;
  }
  const std::uint64_t id = next_id_++;
  HttpClientExchange exchange{id, std::move(request), std::move(promise), {}};
  if (idle_.empty() && waiting_.size() >= options_.max_queued_requests_per_host) {
    exchange.promise.try_set_exception(std::make_exception_ptr(
        RejectedExecutionError("too many requests waiting for a connection to " + authority_)));
    return;
  }
  exchange.timer = loop_.schedule(options_.request_timeout, [weak = weak_from_this(), id] {
    if (auto self = weak.lock()) self->on_request_timeout(id);
  });
  if (!idle_.empty()) {
    auto connection = std::move(idle_.back());
    idle_.pop_back();
    connection->send(std::move(exchange));
    return;
  }
  waiting_.push_back(std::move(exchange));
  connect_if_needed();
}

void HttpConnectionPool::on_request_timeout(std::uint64_t id) {
  auto waiting = std::find_if(waiting_.begin(), waiting_.end(),
                              [id](const HttpClientExchange& e) { return e.id == id; });
  if (waiting != waiting_.end()) {
    HttpClientExchange exchange = std::move(*waiting);
    waiting_.erase(waiting);
    exchange.promise.try_set_exception(std::make_exception_ptr(
        TimeoutError(TimeoutError::Phase::kPoolWait, "no connection to " + authority_ +
                                                         " became free within the request "
                                                         "timeout")));
    return;
  }
  for (const auto& c : connections_) {
    if (c->exchange_id() == id) {
      const std::shared_ptr<HttpClientHandler> connection = c;  // abort takes it out of the list
      // The connection is closed with the request: its response was not read to the end.
      connection->abort(std::make_exception_ptr(
          TimeoutError(TimeoutError::Phase::kRequest, "no complete response from " + authority_)));
      return;
    }
  }
}

void HttpConnectionPool::connect_if_needed() {
  while (!closed_ && waiting_.size() > connecting_ &&
         connections_.size() + connecting_ < options_.max_connections_per_host) {
    start_connect();
  }
}

void HttpConnectionPool::start_connect() {
  auto attempt = std::make_shared<Attempt>();
  attempt->handler = std::make_shared<HttpClientHandler>(weak_from_this());
  const auto limits = options_.limits;
  const auto max_body = options_.max_response_body;
  auto init = ChannelInitializer::from([handler = attempt->handler, limits, max_body](Channel& ch) {
    ch.pipeline().add_last("http-codec", std::make_shared<HttpClientCodec>(limits));
    ch.pipeline().add_last("http-aggregator", std::make_shared<HttpObjectAggregator>(max_body));
    ch.pipeline().add_last("http-client", handler);
  });
  ++connecting_;
  attempts_.push_back(attempt);
  std::weak_ptr<HttpConnectionPool> weak = weak_from_this();
  // The timer holds the attempt weakly: the attempt holds the timer.
  attempt->timer = loop_.schedule(options_.connect_timeout,
                                  [weak, weak_attempt = std::weak_ptr<Attempt>(attempt)] {
                                    auto self = weak.lock();
                                    auto a = weak_attempt.lock();
                                    if (self && a) self->on_connect_timeout(a);
                                  });
  Future<std::shared_ptr<Channel>> connected = connector_(std::move(init));
  connected.add_listener([weak, attempt](const Future<std::shared_ptr<Channel>>& f) {
    if (auto self = weak.lock()) {
      self->on_connected(attempt, f);
    } else if (f.is_success()) {
      f.get()->close();
    }
  });
}

void HttpConnectionPool::on_connect_timeout(const std::shared_ptr<Attempt>& attempt) {
  if (attempt->timed_out) return;
  attempt->timed_out = true;
  attempts_.erase(std::remove(attempts_.begin(), attempts_.end(), attempt), attempts_.end());
  --connecting_;
  fail_first_waiting(std::make_exception_ptr(
      TimeoutError(TimeoutError::Phase::kConnect, "connecting to " + authority_)));
  connect_if_needed();
}

void HttpConnectionPool::on_connected(const std::shared_ptr<Attempt>& attempt,
                                      const Future<std::shared_ptr<Channel>>& result) {
  if (attempt->timed_out) {
    // Given up already: a connection that came too late is not used.
    if (result.is_success()) result.get()->close();
    return;
  }
  if (attempt->timer.valid()) attempt->timer.cancel();
  attempts_.erase(std::remove(attempts_.begin(), attempts_.end(), attempt), attempts_.end());
  --connecting_;
  if (!result.is_success()) {
    std::exception_ptr error = result.cause();
    try {
      std::rethrow_exception(error);
    } catch (const IoError& e) {
      if (e.code() == std::errc::timed_out) {
        error = std::make_exception_ptr(
            TimeoutError(TimeoutError::Phase::kConnect, "connecting to " + authority_));
      } else {
        error = std::make_exception_ptr(ConnectError(e.code(), "connect to " + authority_));
      }
    } catch (...) {
    }
    fail_first_waiting(std::move(error));
    connect_if_needed();
    return;
  }
  const std::shared_ptr<Channel>& channel = result.get();
  if (closed_ || !attempt->handler->is_active()) {
    channel->close();
    fail_first_waiting(std::make_exception_ptr(
        ConnectionClosedError(false, "the connection to " + authority_ + " closed at once")));
    connect_if_needed();
    return;
  }
  ++connections_made_;
  connections_.push_back(attempt->handler);
  dispatch(attempt->handler);
}

void HttpConnectionPool::fail_first_waiting(std::exception_ptr error) {
  if (waiting_.empty()) return;
  HttpClientExchange exchange = std::move(waiting_.front());
  waiting_.pop_front();
  if (exchange.timer.valid()) exchange.timer.cancel();
  exchange.promise.try_set_exception(std::move(error));
}

void HttpConnectionPool::dispatch(const std::shared_ptr<HttpClientHandler>& connection) {
  if (!waiting_.empty()) {
    HttpClientExchange exchange = std::move(waiting_.front());
    waiting_.pop_front();
    connection->send(std::move(exchange));
    return;
  }
  connection->idle_since = loop_.current_time_nanos();
  idle_.push_back(connection);
  arm_idle_timer();
}

void HttpConnectionPool::on_released(const HttpClientHandler* connection, bool reusable) {
  auto it = std::find_if(connections_.begin(), connections_.end(),
                         [connection](const auto& c) { return c.get() == connection; });
  if (it == connections_.end()) return;
  const std::shared_ptr<HttpClientHandler> kept = *it;
  if (!reusable || closed_) {
    kept->close();  // on_closed removes it
    return;
  }
  dispatch(kept);
}

void HttpConnectionPool::on_closed(const HttpClientHandler* connection) {
  auto same = [connection](const auto& c) { return c.get() == connection; };
  idle_.erase(std::remove_if(idle_.begin(), idle_.end(), same), idle_.end());
  const auto before = connections_.size();
  connections_.erase(std::remove_if(connections_.begin(), connections_.end(), same),
                     connections_.end());
  if (connections_.size() != before) connect_if_needed();
}

void HttpConnectionPool::arm_idle_timer() {
  if (idle_timer_armed_ || idle_.empty()) return;
  std::int64_t earliest = idle_.front()->idle_since;
  for (const auto& c : idle_) earliest = std::min(earliest, c->idle_since);
  const std::int64_t due = earliest + options_.pool_idle_timeout.count();
  const std::int64_t delay = std::max<std::int64_t>(0, due - loop_.current_time_nanos());
  idle_timer_armed_ = true;
  idle_timer_ = loop_.schedule(std::chrono::nanoseconds(delay), [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->on_idle_timer();
  });
}

void HttpConnectionPool::on_idle_timer() {
  idle_timer_armed_ = false;
  const std::int64_t now = loop_.current_time_nanos();
  std::vector<std::shared_ptr<HttpClientHandler>> expired;
  for (const auto& c : idle_) {
    if (now - c->idle_since >= options_.pool_idle_timeout.count()) expired.push_back(c);
  }
  for (const auto& c : expired) {
    c->close();  // on_closed takes it out of idle_ (at once or when the close completes)
    idle_.erase(std::remove(idle_.begin(), idle_.end(), c), idle_.end());
  }
  arm_idle_timer();
}

void HttpConnectionPool::close() {
  if (closed_) return;
  closed_ = true;
  if (idle_timer_.valid()) idle_timer_.cancel();
  while (!waiting_.empty()) {
    fail_first_waiting(std::make_exception_ptr(ClosedChannelError("the HTTP client is closed")));
  }
  const auto connections = connections_;
  for (const auto& c : connections) c->close();
  idle_.clear();
}

}  // namespace trellis::http
