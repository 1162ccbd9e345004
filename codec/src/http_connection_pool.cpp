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
  if (unused_timer_.valid()) unused_timer_.cancel();
  for (auto& exchange : waiting_)
    if (exchange.timer.valid()) exchange.timer.cancel();
  for (auto& exchange : retrying_)
    if (exchange.timer.valid()) exchange.timer.cancel();
  for (auto& attempt : attempts_)
    if (attempt->timer.valid()) attempt->timer.cancel();
}

namespace {
bool is_idempotent(const HttpMethod& method) noexcept {
  switch (method.id()) {
    case HttpMethod::kGet:
    case HttpMethod::kHead:
    case HttpMethod::kPut:
    case HttpMethod::kDelete:
    case HttpMethod::kOptions:
    case HttpMethod::kTrace:
      return true;
    default:
      return false;
  }
}
}  // namespace

void HttpConnectionPool::submit(FullHttpRequest request, Promise<FullHttpResponse> promise) {
  submit_exchange(HttpClientExchange(std::move(request), std::move(promise)));
}

void HttpConnectionPool::submit(FullHttpRequest request, Promise<FullHttpResponse> promise,
                                std::chrono::nanoseconds timeout) {
  submit_exchange(HttpClientExchange(std::move(request), std::move(promise)),
                  std::max(timeout, std::chrono::nanoseconds(0)));
}

void HttpConnectionPool::submit_streaming(FullHttpRequest request,
                                          Promise<StreamingHttpResponse> promise) {
  HttpClientExchange exchange(std::move(request), Promise<FullHttpResponse>());
  exchange.streaming = true;
  exchange.stream_promise.emplace(std::move(promise));
  submit_exchange(std::move(exchange));
}

std::size_t HttpConnectionPool::depth() const noexcept {
  return std::max<std::size_t>(1, options_.pipelining_depth);
}

void HttpConnectionPool::submit_exchange(HttpClientExchange exchange,
                                         std::chrono::nanoseconds timeout) {
  if (closed_) {
    exchange.fail(std::make_exception_ptr(ClosedChannelError("the HTTP client is closed")));
    return;
  }
  const std::uint64_t id = next_id_++;
  exchange.id = id;
  if (idle_.empty() && waiting_.size() >= options_.max_queued_requests_per_host) {
    exchange.fail(std::make_exception_ptr(
        RejectedExecutionError("too many requests waiting for a connection to " + authority_)));
    return;
  }
  exchange.timer = loop_.schedule(timeout.count() >= 0 ? timeout : options_.request_timeout,
                                  [weak = weak_from_this(), id] {
                                    if (auto self = weak.lock()) self->on_request_timeout(id);
                                  });
  while (!idle_.empty()) {
    auto connection = std::move(idle_.back());
    idle_.pop_back();
    if (connection->usable()) {
      send_on(*connection, std::move(exchange));
      return;
    }
    // Closed by the server (its channel_inactive not run yet), or bytes arrived on it that
    // answer no request: never handed out.
    discard(*connection);
  }
  if (depth() > 1 && waiting_.empty() &&
      connections_.size() + connecting_ >= options_.max_connections_per_host) {
    // Every connection is open and busy: behind the requests of the least loaded one.
    HttpClientHandler* best = nullptr;
    for (const auto& c : connections_) {
      if (c->can_pipeline(depth()) && (!best || c->in_flight() < best->in_flight())) {
        best = c.get();
      }
    }
    if (best) {
      send_on(*best, std::move(exchange));
      return;
    }
  }
  waiting_.push_back(std::move(exchange));
  connect_if_needed();
}

void HttpConnectionPool::send_on(HttpClientHandler& connection, HttpClientExchange exchange) {
  if (!connection.usable()) {
    discard(connection);
    requeue(std::move(exchange));
    return;
  }
  if (options_.retry_on_stale_connection && !exchange.retried && connection.reused() &&
      is_idempotent(exchange.request.method)) {
    const FullHttpRequest& r = exchange.request;
    exchange.retry_copy.emplace(
        FullHttpRequest{r.method, r.target, r.version, r.headers, r.content.share(), r.trailers});
  }
  connection.send(std::move(exchange));
}

void HttpConnectionPool::discard(HttpClientHandler& connection) {
  auto same = [&connection](const auto& c) { return c.get() == &connection; };
  // Kept alive through the close (the pipeline may be letting go of it too).
  std::shared_ptr<HttpClientHandler> kept;
  if (auto it = std::find_if(connections_.begin(), connections_.end(), same);
      it != connections_.end()) {
    kept = *it;
    connections_.erase(it);
  }
  idle_.erase(std::remove_if(idle_.begin(), idle_.end(), same), idle_.end());
  // No longer counted against max_connections_per_host, even before its close is processed.
  connection.close();
}

void HttpConnectionPool::requeue(HttpClientExchange exchange) {
  if (closed_) {
    exchange.fail(std::make_exception_ptr(ClosedChannelError("the HTTP client is closed")));
    return;
  }
  (exchange.retried ? retrying_ : waiting_).push_front(std::move(exchange));
  connect_if_needed();
}

void HttpConnectionPool::retry_or_fail(HttpClientExchange exchange) {
  if (closed_ || !exchange.retry_copy) {
    exchange.fail(std::make_exception_ptr(
        ConnectionClosedError(true, "the connection closed before the response arrived")));
    return;
  }
  exchange.request = std::move(*exchange.retry_copy);
  exchange.retry_copy.reset();
  exchange.retried = true;
  ++retries_;
  retrying_.push_back(std::move(exchange));
  connect_if_needed();
}

void HttpConnectionPool::on_request_timeout(std::uint64_t id) {
  auto find = [id](const trellis::detail::RingBuffer<HttpClientExchange>& queue) {
    std::size_t i = 0;
    while (i < queue.size() && queue[i].id != id) ++i;
    return i;
  };
  if (const std::size_t at = find(retrying_); at < retrying_.size()) {
    HttpClientExchange exchange = retrying_.take_at(at);
    exchange.fail(std::make_exception_ptr(TimeoutError(
        TimeoutError::Phase::kPoolWait,
        "no new connection to " + authority_ + " for a retry within the request timeout")));
    check_unused();
    return;
  }
  if (const std::size_t at = find(waiting_); at < waiting_.size()) {
    HttpClientExchange exchange = waiting_.take_at(at);
    exchange.fail(std::make_exception_ptr(
        TimeoutError(TimeoutError::Phase::kPoolWait, "no connection to " + authority_ +
                                                         " became free within the request "
                                                         "timeout")));
    check_unused();
    return;
  }
  for (const auto& c : connections_) {
    if (c->carries(id)) {
      const std::shared_ptr<HttpClientHandler> connection = c;  // abort takes it out of the list
      // The connection is closed with the request: its response was not read to the end.
      connection->abort(
          id, std::make_exception_ptr(TimeoutError(TimeoutError::Phase::kRequest,
                                                   "no complete response from " + authority_)));
      return;
    }
  }
}

void HttpConnectionPool::connect_if_needed() {
  while (!closed_ && waiting_.size() + retrying_.size() > connecting_ &&
         connections_.size() + connecting_ < options_.max_connections_per_host) {
    start_connect();
  }
}

void HttpConnectionPool::start_connect() {
  auto attempt = std::make_shared<Attempt>();
  attempt->handler = std::make_shared<HttpClientHandler>(weak_from_this(), options_.read_timeout);
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
  // Abandoned: its channel (connected, say, with a TLS handshake the server never answers) is
  // closed now, not left open until the connector gives up of its own accord.
  attempt->handler->close();
  fail_first_waiting(std::make_exception_ptr(
      TimeoutError(TimeoutError::Phase::kConnect, "connecting to " + authority_)));
  connect_if_needed();
  check_unused();
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
    check_unused();
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
  if (!retrying_.empty()) {
    // A new connection: what a stale one failed to carry goes first.
    HttpClientExchange exchange = std::move(retrying_.front());
    retrying_.pop_front();
    send_on(*attempt->handler, std::move(exchange));
    return;
  }
  dispatch(attempt->handler);
}

void HttpConnectionPool::fail_first_waiting(std::exception_ptr error) {
  auto& queue = retrying_.empty() ? waiting_ : retrying_;
  if (queue.empty()) return;
  HttpClientExchange exchange = std::move(queue.front());
  queue.pop_front();
  exchange.fail(std::move(error));
}

void HttpConnectionPool::dispatch(const std::shared_ptr<HttpClientHandler>& connection) {
  while (!waiting_.empty() && connection->usable() &&
         (!connection->busy() || connection->can_pipeline(depth()))) {
    HttpClientExchange exchange = std::move(waiting_.front());
    waiting_.pop_front();
    send_on(*connection, std::move(exchange));
  }
  if (connection->busy()) return;
  if (!connection->usable()) {
    discard(*connection);
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
  check_unused();
}

void HttpConnectionPool::on_unused(UniqueFunction<void()> callback) {
  on_unused_ = std::move(callback);
  // Set before the pool is shared (HttpClient): the countdown starts on the loop, the first time
  // the pool becomes unused there, so that no timer state is written from another thread.
  if (loop_.in_event_loop()) check_unused();
}

void HttpConnectionPool::check_unused() {
  if (closed_ || !on_unused_ || !unused()) return;
  unused_since_ = loop_.current_time_nanos();
  if (unused_timer_armed_) return;  // it looks again when it fires
  try {
    unused_timer_ = loop_.schedule(options_.pool_idle_timeout, [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->on_unused_timer();
    });
    unused_timer_armed_ = true;
  } catch (const RejectedExecutionError&) {
    // The loop is shutting down: nothing to let go later.
  }
}

void HttpConnectionPool::on_unused_timer() {
  unused_timer_armed_ = false;
  if (closed_ || !on_unused_ || !unused()) return;  // used again meanwhile: rearmed when unused
  const std::int64_t due = unused_since_ + options_.pool_idle_timeout.count();
  const std::int64_t now = loop_.current_time_nanos();
  if (now < due) {
    unused_timer_armed_ = true;
    unused_timer_ = loop_.schedule(std::chrono::nanoseconds(due - now), [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->on_unused_timer();
    });
    return;
  }
  unused_since_ = now;
  on_unused_();  // may let the last reference to this pool go once it returns
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
  while (!waiting_.empty() || !retrying_.empty()) {
    fail_first_waiting(std::make_exception_ptr(ClosedChannelError("the HTTP client is closed")));
  }
  if (unused_timer_.valid()) unused_timer_.cancel();
  const auto connections = connections_;
  for (const auto& c : connections) c->close();
  idle_.clear();
  // Connections being made are closed too (their connector's future fails or is ignored).
  const auto attempts = attempts_;
  for (const auto& a : attempts) a->handler->close();
}

}  // namespace trellis::http
