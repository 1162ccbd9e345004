// HttpClientOptions: the limits and deadlines of an HTTP client's connection pools.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include <trellis/codec/http/http_parser.hpp>

namespace trellis::ssl {
class SslContext;  // trellis/ssl/ssl_context.hpp (the HttpClient links trellis::ssl)
}

namespace trellis::http {

/// The limits and deadlines of an HttpClient (and of each of its HttpConnectionPools). Every
/// deadline runs on the loop's clock.
struct HttpClientOptions {
  /// Connections open at once to one scheme+host+port; requests beyond wait in a queue.
  std::size_t max_connections_per_host = 8;
  /// Requests that may wait for a connection of one host; beyond, execute fails at once with
  /// RejectedExecutionError (bounded memory when a server stalls).
  std::size_t max_queued_requests_per_host = 4096;
  /// An idle keep-alive connection is closed after this long unused.
  std::chrono::nanoseconds pool_idle_timeout = std::chrono::seconds(60);
  /// Establishing a TCP connection (TimeoutError, phase kConnect).
  std::chrono::nanoseconds connect_timeout = std::chrono::seconds(10);
  /// From execute() to the end of the response: waiting for a connection (phase kPoolWait),
  /// then sending and reading (phase kRequest). The connection of a timed-out request is closed.
  std::chrono::nanoseconds request_timeout = std::chrono::seconds(30);
  /// While a response is awaited, the longest time between two reads of its bytes (from the
  /// request's write to the head, then between any two reads of the head and body, a streamed
  /// body included): a server that stalls fails the request with TimeoutError (phase kRead) and
  /// its connection is closed. Time the connection spends not reading because the application
  /// has not taken a streamed body's chunks does not count. Zero: no limit.
  std::chrono::nanoseconds read_timeout = std::chrono::seconds(30);
  /// Follow redirects (301, 302, 303, 307, 308 with a Location, resolved against the request's
  /// URL as RFC 3986 §5.2 says): 301/302/303 are followed with GET and no body (HEAD stays HEAD),
  /// 307/308 with the same method and body. To another origin (scheme, host or port) the
  /// credentials stay behind (Authorization, Proxy-Authorization and Cookie are dropped), and a
  /// 307/308 with a body is not followed (the 3xx response is returned): the body was meant for
  /// the origin it was sent to. request_timeout bounds the whole chain. Off: the 3xx response is
  /// returned.
  bool follow_redirects = false;
  /// Follow a redirect from https:// to http://. Off (the default), such a redirect fails the
  /// request with InsecureRedirectError.
  bool allow_insecure_redirects = false;
  /// Redirects followed for one request at most; one more fails with TooManyRedirectsError.
  int max_redirects = 5;
  /// The largest response body read (a larger one fails with codec::TooLongFrameError).
  std::size_t max_response_body = 16 * 1024 * 1024;
  /// Requests in flight on one connection at most (HTTP/1.1 pipelining): 0 or 1, the default,
  /// is no pipelining. Above 1, once max_connections_per_host connections are open, a request
  /// goes behind those in flight on the least loaded connection rather than waiting for one to
  /// be free; responses are matched to requests in order, and a connection that fails fails all
  /// of its requests (ConnectionClosedError says whether each may have been processed).
  std::size_t pipelining_depth = 0;
  /// An idempotent request (GET, HEAD, PUT, DELETE, OPTIONS, TRACE) sent on a reused keep-alive
  /// connection that closes before any byte of its response (the server had closed it while
  /// idle) is sent once more, on a new connection.
  bool retry_on_stale_connection = true;
  /// Limits of the response parser (head size, field count, chunk size).
  HttpParserLimits limits;
  /// The TLS client context of https:// URLs (a client SslContext: trusted CAs, verification).
  /// Null: one with the system's trusted CAs, peer and hostname verification, ALPN http/1.1.
  /// The handshake is part of connecting (connect_timeout); a failed one fails the request with
  /// ssl::SslHandshakeError.
  std::shared_ptr<const ssl::SslContext> tls;
};

}  // namespace trellis::http
