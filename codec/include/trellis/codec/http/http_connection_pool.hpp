// HttpConnectionPool: the connections of an HTTP client to one scheme+host+port, all on one
// event loop. Keep-alive connections are reused (the most recently used first); up to
// max_connections_per_host are open at once and further requests wait in a bounded FIFO queue.
// Every deadline (connect, request, pool wait, idle) is on the loop's clock. Transport-neutral:
// a Connector makes the channels, so the pool runs on sockets (HttpClient) and on
// EmbeddedChannels in tests alike.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <trellis/codec/http/http_client_handler.hpp>
#include <trellis/codec/http/http_client_options.hpp>
#include <trellis/pipeline/detail/ring_buffer.hpp>
#include <trellis/pipeline/event_executor.hpp>
#include <trellis/pipeline/future.hpp>
#include <trellis/pipeline/unique_function.hpp>

namespace trellis {
class Channel;
class ChannelHandler;
}  // namespace trellis

namespace trellis::http {

/// The connections of an HTTP client to one scheme+host+port, all on one event loop: keep-alive
/// connections are reused (the most recently used first), up to max_connections_per_host are open
/// at once and further requests wait in a bounded FIFO queue. Every deadline is on the loop's
/// clock. Transport-neutral: a Connector makes the channels. Its operations run on the pool's loop
/// (executor()); requests fail with the errors of http_client_errors.hpp, RejectedExecutionError
/// when the queue is full, ClosedChannelError after close().
class HttpConnectionPool : public std::enable_shared_from_this<HttpConnectionPool> {
 public:
  /// Connects a new channel with handler as its pipeline's handler (a ChannelInitializer), on
  /// the pool's loop: the future completes there, with an active channel of that loop.
  using Connector =
      UniqueFunction<Future<std::shared_ptr<Channel>>(std::shared_ptr<ChannelHandler> handler)>;

  /// authority names the destination in error messages ("127.0.0.1:8080").
  HttpConnectionPool(EventExecutor& loop, std::string authority, HttpClientOptions options,
                     Connector connector);
  ~HttpConnectionPool();
  HttpConnectionPool(const HttpConnectionPool&) = delete;
  HttpConnectionPool& operator=(const HttpConnectionPool&) = delete;

  /// The loop the pool and its connections run on.
  EventExecutor& executor() const noexcept { return loop_; }

  /// On the pool's loop: sends request on an idle connection, a new one, or after the requests
  /// waiting before it. promise (of this loop) completes with the response or the error.
  void submit(FullHttpRequest request, Promise<FullHttpResponse> promise);
  /// The same with its own deadline instead of request_timeout (what is left of the deadline of
  /// a chain of redirects).
  void submit(FullHttpRequest request, Promise<FullHttpResponse> promise,
              std::chrono::nanoseconds timeout);
  /// The same for a streaming request: promise completes with the head, and the body is read
  /// from the response's HttpResponseBody. request_timeout runs until the head.
  void submit_streaming(FullHttpRequest request, Promise<StreamingHttpResponse> promise);
  /// On the pool's loop: closes every connection, those being connected included, and fails
  /// every waiting request (ClosedChannelError); later submissions fail the same way.
  void close();
  /// On the pool's loop, or before the pool is shared: callback runs (on the loop) once the pool
  /// has had no connection (open or being made) and no request for pool_idle_timeout, so that
  /// its owner can let it go; it runs again after each later such period. Only the last callback
  /// set is kept. Set before the pool is shared, the countdown starts the first time the pool
  /// becomes unused on its loop.
  void on_unused(UniqueFunction<void()> callback);
  /// True while the pool has no connection (open or being made) and no request waiting.
  bool unused() const noexcept {
    return connections_.empty() && connecting_ == 0 && waiting_.empty() && retrying_.empty();
  }

  /// @name Counters
  ///@{

  /// For tests and diagnostics (on the pool's loop): connections open (busy or idle), idle,
  /// being connected, and requests waiting for a connection.
  std::size_t open_connections() const noexcept { return connections_.size(); }
  std::size_t idle_connections() const noexcept { return idle_.size(); }
  std::size_t connecting() const noexcept { return connecting_; }
  std::size_t waiting_requests() const noexcept { return waiting_.size() + retrying_.size(); }
  ///@}
  /// Requests sent once more after a stale connection, since the pool was created.
  std::uint64_t retries() const noexcept { return retries_; }
  /// Connections made since the pool was created.
  std::uint64_t connections_made() const noexcept { return connections_made_; }

 private:
  friend class HttpClientHandler;
  struct Attempt;

  // From HttpClientHandler: the response is complete; reusable: the connection may be kept.
  void on_released(const HttpClientHandler* connection, bool reusable);
  // From HttpClientHandler: the connection closed.
  void on_closed(const HttpClientHandler* connection);
  // From HttpClientHandler: exchange was on a connection found stale; it is sent again on a new
  // connection when it may be, else it fails with ConnectionClosedError.
  void retry_or_fail(HttpClientExchange exchange);

  void submit_exchange(HttpClientExchange exchange,
                       std::chrono::nanoseconds timeout = std::chrono::nanoseconds(-1));
  // Closes connection (closed or poisoned) and forgets it at once.
  void discard(HttpClientHandler& connection);
  // exchange, never written, goes back to the head of its queue (its connection was found
  // closed or poisoned when it was about to be sent).
  void requeue(HttpClientExchange exchange);
  // Starts the unused countdown when the pool has become unused.
  void check_unused();
  void on_unused_timer();
  // Sends exchange on connection, keeping a copy of the request when it may be retried.
  void send_on(HttpClientHandler& connection, HttpClientExchange exchange);
  std::size_t depth() const noexcept;

  void on_request_timeout(std::uint64_t id);
  void on_connected(const std::shared_ptr<Attempt>& attempt,
                    const Future<std::shared_ptr<Channel>>& result);
  void on_connect_timeout(const std::shared_ptr<Attempt>& attempt);
  // Opens connections while requests wait for more than are being connected, within the limit.
  void connect_if_needed();
  void start_connect();
  // A connection is free: the next waiting request goes on it, or it joins the idle ones.
  void dispatch(const std::shared_ptr<HttpClientHandler>& connection);
  void arm_idle_timer();
  void on_idle_timer();
  void fail_first_waiting(std::exception_ptr error);

  EventExecutor& loop_;
  std::string authority_;
  HttpClientOptions options_;
  Connector connector_;
  // Rings, not deques: a deque of exchanges this size takes and frees a block per request.
  trellis::detail::RingBuffer<HttpClientExchange> waiting_;
  trellis::detail::RingBuffer<HttpClientExchange> retrying_;     // each waits for a new connection
  std::vector<std::shared_ptr<HttpClientHandler>> connections_;  // open (busy or idle)
  std::vector<std::shared_ptr<HttpClientHandler>> idle_;         // most recently used last
  std::vector<std::shared_ptr<Attempt>> attempts_;               // connecting
  std::size_t connecting_ = 0;
  std::uint64_t next_id_ = 1;
  std::uint64_t connections_made_ = 0;
  std::uint64_t retries_ = 0;
  ScheduledFuture<void> idle_timer_;
  bool idle_timer_armed_ = false;
  UniqueFunction<void()> on_unused_;
  ScheduledFuture<void> unused_timer_;
  bool unused_timer_armed_ = false;
  std::int64_t unused_since_ = 0;
  bool closed_ = false;
};

}  // namespace trellis::http
