// HttpClient: an HTTP/1.1 client over an EventLoopGroup. One HttpConnectionPool per
// scheme+host+port (keep-alive reuse, a connection limit and a wait queue, every deadline on
// the loop's clock), and two APIs over that one engine: futures (execute) and coroutines
// (co_await request).
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include <trellis/codec/http/http_client_errors.hpp>
#include <trellis/codec/http/http_client_options.hpp>
#include <trellis/codec/http/http_connection_pool.hpp>
#include <trellis/codec/http/http_message.hpp>
#include <trellis/codec/http/streaming_http_response.hpp>
#include <trellis/codec/http/url.hpp>
#include <trellis/pipeline/future.hpp>
#include <trellis/pipeline/task.hpp>
#include <trellis/transport/event_loop_group.hpp>

namespace trellis::http {

struct Redirects;

/// An HTTP/1.1 client over an EventLoopGroup: one HttpConnectionPool per scheme+host+port on one
/// of the group's loops, and two APIs over that one engine, futures (execute, get) and coroutines
/// (co_await request). Its requests may be made from any thread; the futures complete on the
/// connection's loop. Requests fail with ConnectError, TimeoutError, ConnectionClosedError,
/// codec::DecoderError, UrlError or TooManyRedirectsError (see execute()).
class HttpClient {
 public:
  /// A client whose connections run on the loops of `group` (which must outlive it).
  explicit HttpClient(EventLoopGroup& group, HttpClientOptions options = {});
  /// A client on EventLoopGroup::singleton(), the process-wide group.
  explicit HttpClient(HttpClientOptions options = {});
  /// close(): safe also when the group was shut down first.
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  /// Sends request and completes with the whole response (1xx interim responses skipped). The
  /// destination is the request's target when it is an absolute http:// URL (sent in origin
  /// form), else its Host header. A Host header is added when missing. The future belongs to
  /// the connection's loop. Fails with ConnectError, TimeoutError, ConnectionClosedError,
  /// codec::DecoderError (a malformed response), UrlError (no usable destination),
  /// TooManyRedirectsError (with follow_redirects).
  Future<FullHttpResponse> execute(FullHttpRequest request);
  /// A request without a body.
  Future<FullHttpResponse> execute(HttpRequest request);
  /// GET url.
  Future<FullHttpResponse> get(std::string_view url);

  ///@{
  /// The coroutine form of execute: `FullHttpResponse r = co_await client.request(req);`. It
  /// awaits the engine's future: on the connection's loop it resumes inline, elsewhere on the
  /// awaiting task's executor.
  Task<FullHttpResponse> request(FullHttpRequest request);
  Task<FullHttpResponse> request(HttpRequest request);
  ///@}

  ///@{
  /// The streaming form: completes with the response head once it arrived, and the body is read
  /// as it comes, `while (auto chunk = co_await response.body().next()) ...`, back-pressured (the
  /// connection stops reading while a few chunks wait for the reader). The connection goes back
  /// to the pool once the body was read to its end; a response dropped before that closes it.
  /// request_timeout runs until the head; redirects are not followed (the 3xx is returned).
  Task<StreamingHttpResponse> request_streaming(FullHttpRequest request);
  Task<StreamingHttpResponse> request_streaming(HttpRequest request);
  ///@}

  /// Closes every connection, those being made included (requests in flight fail with
  /// ConnectionClosedError, waiting ones with ClosedChannelError) and waits (bounded) for the
  /// pools' loops to have done so; later requests fail with ClosedChannelError. Not from one of
  /// the group's threads. Safe in any order with the group's shutdown, and more than once.
  void close();

  /// The connection pools kept, one per scheme+host+port in use (a pool unused for
  /// pool_idle_timeout is let go). For diagnostics.
  std::size_t pool_count() const;

  /// The options it was made with.
  const HttpClientOptions& options() const noexcept;

 private:
  friend struct Redirects;
  struct Impl;
  // Shared with redirects in flight, which hold it weakly: a client destroyed meanwhile ends
  // them instead of being used after its end.
  std::shared_ptr<Impl> impl_;
};

}  // namespace trellis::http
