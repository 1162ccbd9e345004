// HttpClient (see http_client.hpp): the pools, one per destination, and the connector that makes
// their sockets on the pool's loop.
#include <trellis/http_client/http_client.hpp>

#include <charconv>
#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/ssl/ssl_context_builder.hpp>
#include <trellis/ssl/ssl_handler.hpp>
#include <trellis/transport/bootstrap.hpp>

namespace trellis::http {

namespace {

bool has_http_scheme(std::string_view target) noexcept {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  for (std::string_view scheme : {std::string_view("http://"), std::string_view("https://")}) {
    if (target.size() < scheme.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < scheme.size() && same; ++i) same = lower(target[i]) == scheme[i];
    if (same) return true;
  }
  return false;
}

// The destination of request, which is put in origin form with a Host header.
Url destination_of(FullHttpRequest& request) {
  Url url;
  if (has_http_scheme(request.target)) {
    url = Url::parse(request.target);
    request.target = url.target;
  } else {
    const std::string_view host = request.headers.get(HeaderId::kHost).value_or("");
    if (host.empty()) throw UrlError("request without an absolute URL or a Host header");
    if (request.target.empty() || request.target.front() != '/') {
      throw UrlError("request target \"" + request.target + "\" is not an absolute path");
    }
    // Parsed from a buffer of the thread's, kept between calls: no allocation per request.
    thread_local std::string absolute;
    absolute.assign("http://").append(host).append(request.target);
    url = Url::parse(absolute);
  }
  if (!request.headers.contains(HeaderId::kHost)) {
    request.headers.add(HeaderId::kHost, url.host_header());
  }
  return url;
}

bool is_redirect(std::uint16_t code) noexcept {
  return code == 301 || code == 302 || code == 303 || code == 307 || code == 308;
}

// Connects, then (for https) runs the TLS handshake before the pool gets the channel: a failed
// handshake fails the connection attempt with its SslHandshakeError.
Future<std::shared_ptr<Channel>> connect_tls(Future<std::shared_ptr<Channel>> connected,
                                             EventExecutor& loop,
                                             std::shared_ptr<const ssl::SslContext> tls,
                                             std::string host) {
  Promise<std::shared_ptr<Channel>> ready(&loop);
  connected.add_listener([ready, tls = std::move(tls), host = std::move(host)](
                             const Future<std::shared_ptr<Channel>>& f) mutable {
    if (!f.is_success()) {
      ready.try_set_exception(f.cause());
      return;
    }
    std::shared_ptr<Channel> channel = f.get();
    try {
      auto handler = std::make_shared<ssl::SslHandler>(*tls, host);
      channel->pipeline().add_first("tls", handler);
      handler->handshake_future().add_listener([ready, channel](const Future<void>& h) mutable {
        if (h.is_success()) {
          ready.try_set_value(channel);
        } else {
          ready.try_set_exception(h.cause());
          channel->close();
        }
      });
    } catch (...) {
      ready.try_set_exception(std::current_exception());
      channel->close();
    }
  });
  return ready.future();
}

}  // namespace

struct HttpClient::Impl : std::enable_shared_from_this<HttpClient::Impl> {
  Impl(EventLoopGroup& g, HttpClientOptions o) : group(g), options(o) {}

  std::shared_ptr<HttpConnectionPool> pool_for(const Url& url);
  std::shared_ptr<const ssl::SslContext> tls_context();
  // timeout: the request's own deadline (what is left of a redirect chain's), else none given.
  Future<FullHttpResponse> execute_once(
      const Url& url, FullHttpRequest request,
      std::chrono::nanoseconds timeout = std::chrono::nanoseconds(-1));
  Future<FullHttpResponse> execute(const Url& url, FullHttpRequest request);
  Future<StreamingHttpResponse> execute_streaming(const Url& url, FullHttpRequest request);
  void close_all();
  // From a pool's loop: the pool under key has been unused for pool_idle_timeout.
  void evict(const std::string& key, const HttpConnectionPool* pool);

  EventLoopGroup& group;
  HttpClientOptions options;
  std::mutex mutex;
  bool closed = false;  // close() was called: no more pools
  std::unordered_map<std::string, std::shared_ptr<HttpConnectionPool>> pools;
  std::shared_ptr<const ssl::SslContext> default_tls;  // made at the first https request
};

// One request that follows redirects: what the next hop needs of it, and the result.
struct Redirects {
  std::weak_ptr<HttpClient::Impl> client;
  Url url;
  HttpMethod method;
  HttpVersion version;
  HttpHeaders headers;
  ByteBuf body;  // a handle on the bytes, for 307/308
  int followed = 0;
  EventExecutor* clock = nullptr;  // the first hop's loop
  std::int64_t deadline = 0;       // request_timeout from the first hop, on clock
  Promise<FullHttpResponse> result;

  FullHttpRequest next_request() const {
    FullHttpRequest r;
    r.method = method;
    r.target = url.target;
    r.version = version;
    r.headers = headers;
    r.content = body.share();
    return r;
  }
};

namespace {
void follow(const std::shared_ptr<Redirects>& state, Future<FullHttpResponse> hop) {
  hop.add_listener([state](const Future<FullHttpResponse>& f) {
    if (!f.is_success()) {
      state->result.try_set_exception(f.cause());
      return;
    }
    Future<FullHttpResponse> handle = f;
    FullHttpResponse response = std::move(handle).get();
    const auto location = response.headers.get("Location");
    if (!is_redirect(response.status.code) || !location) {
      state->result.try_set_value(std::move(response));
      return;
    }
    auto client = state->client.lock();
    if (!client) {
      state->result.try_set_exception(
          std::make_exception_ptr(ClosedChannelError("the HTTP client is closed")));
      return;
    }
    if (++state->followed > client->options.max_redirects) {
      state->result.try_set_exception(std::make_exception_ptr(TooManyRedirectsError(
          "more than " + std::to_string(client->options.max_redirects) + " redirects")));
      return;
    }
    try {
      const Url next = state->url.resolve(*location);
      if (state->url.https && !next.https && !client->options.allow_insecure_redirects) {
        throw InsecureRedirectError("redirect from " + std::string(state->url.scheme_prefix()) +
                                    state->url.host_header() + " to http://" + next.host_header() +
                                    " refused (not TLS)");
      }
      const bool other_origin = next.host != state->url.host || next.port != state->url.port ||
                                next.https != state->url.https;
      const std::uint16_t code = response.status.code;
      const bool same_method = code == 307 || code == 308;
      if (other_origin && same_method && state->body.is_readable()) {
        // The body was meant for the origin it was sent to: the application decides.
        state->result.try_set_value(std::move(response));
        return;
      }
      if (other_origin) {
        state->headers.remove("Authorization");
        state->headers.remove("Proxy-Authorization");
        state->headers.remove("Cookie");
      }
      state->headers.set("Host", next.host_header());
      if (!same_method) {
        if (state->method != HttpMethod::kHead) state->method = HttpMethod::kGet;
        state->body = ByteBuf();
        state->headers.remove("Content-Length");
        state->headers.remove("Transfer-Encoding");
        state->headers.remove("Content-Type");
      }
      state->url = next;
      // The whole chain within request_timeout.
      const std::int64_t left = state->deadline - state->clock->current_time_nanos();
      if (left <= 0) {
        throw TimeoutError(TimeoutError::Phase::kRequest,
                           "the redirects did not end within the request timeout");
      }
      follow(state, client->execute_once(state->url, state->next_request(),
                                         std::chrono::nanoseconds(left)));
    } catch (...) {
      state->result.try_set_exception(std::current_exception());
    }
  });
}
}  // namespace

// Called with mutex held.
std::shared_ptr<const ssl::SslContext> HttpClient::Impl::tls_context() {
  if (options.tls) return options.tls;
  if (!default_tls) {
    default_tls = std::make_shared<const ssl::SslContext>(
        ssl::SslContextBuilder::for_client().alpn({"http/1.1"}).build());
  }
  return default_tls;
}

std::shared_ptr<HttpConnectionPool> HttpClient::Impl::pool_for(const Url& url) {
  // The key is built in a buffer of the thread's: looking up a known pool allocates nothing.
  thread_local std::string key;
  char port[8];
  const auto port_end = std::to_chars(port, port + sizeof port, url.port).ptr;
  key.assign(url.scheme_prefix()).append(url.host).append(":").append(port, port_end);
  std::lock_guard lock(mutex);
  if (closed) throw ClosedChannelError("the HTTP client is closed");
  auto it = pools.find(key);
  if (it != pools.end()) return it->second;
  std::shared_ptr<const ssl::SslContext> tls = url.https ? tls_context() : nullptr;
  EventLoop& loop = group.next();
  const auto connect_timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(options.connect_timeout);
  auto connector = [&loop, host = url.host, port = url.port, connect_timeout,
                    tls = std::move(tls)](std::shared_ptr<ChannelHandler> init) {
    Bootstrap b;
    b.group(loop)
        .handler(std::move(init))
        .option(channel_option::tcp_nodelay, true)
        .option(channel_option::connect_timeout, connect_timeout);
    Future<std::shared_ptr<Channel>> connected = b.connect(host, port);
    if (!tls) return connected;
    return connect_tls(std::move(connected), loop, tls, host);
  };
  auto pool =
      std::make_shared<HttpConnectionPool>(loop, url.host_header(), options, std::move(connector));
  // A client fed many destinations (user-supplied URLs, redirects) keeps the pools in use: one
  // unused for pool_idle_timeout goes. (Set before the pool is shared with its loop.)
  pool->on_unused([weak = weak_from_this(), key = key, raw = pool.get()] {
    if (auto self = weak.lock()) self->evict(key, raw);
  });
  pools.emplace(key, pool);
  return pool;
}

void HttpClient::Impl::evict(const std::string& key, const HttpConnectionPool* pool) {
  std::shared_ptr<HttpConnectionPool> gone;  // released outside the lock
  std::lock_guard lock(mutex);
  auto it = pools.find(key);
  if (it == pools.end() || it->second.get() != pool) return;
  gone = std::move(it->second);
  pools.erase(it);
}

Future<FullHttpResponse> HttpClient::Impl::execute_once(const Url& url, FullHttpRequest request,
                                                        std::chrono::nanoseconds timeout) {
  std::shared_ptr<HttpConnectionPool> pool;
  try {
    pool = pool_for(url);
  } catch (...) {
    return make_failed_future<FullHttpResponse>(std::current_exception());
  }
  EventExecutor& loop = pool->executor();
  Promise<FullHttpResponse> promise(&loop);
  Future<FullHttpResponse> future = promise.future();
  auto submit = [timeout](HttpConnectionPool& p, FullHttpRequest r, Promise<FullHttpResponse> pr) {
    if (timeout.count() >= 0) {
      p.submit(std::move(r), std::move(pr), timeout);
    } else {
      p.submit(std::move(r), std::move(pr));
    }
  };
  if (loop.in_event_loop()) {
    submit(*pool, std::move(request), std::move(promise));
    return future;
  }
  try {
    loop.execute([pool = std::move(pool), request = std::move(request), promise, submit]() mutable {
      submit(*pool, std::move(request), std::move(promise));
    });
  } catch (...) {
    // The loop takes no more tasks (its group was shut down).
    promise.try_set_exception(std::current_exception());
  }
  return future;
}

Future<StreamingHttpResponse> HttpClient::Impl::execute_streaming(const Url& url,
                                                                  FullHttpRequest request) {
  std::shared_ptr<HttpConnectionPool> pool;
  try {
    pool = pool_for(url);
  } catch (...) {
    return make_failed_future<StreamingHttpResponse>(std::current_exception());
  }
  EventExecutor& loop = pool->executor();
  Promise<StreamingHttpResponse> promise(&loop);
  Future<StreamingHttpResponse> future = promise.future();
  if (loop.in_event_loop()) {
    pool->submit_streaming(std::move(request), std::move(promise));
    return future;
  }
  try {
    loop.execute([pool = std::move(pool), request = std::move(request), promise]() mutable {
      pool->submit_streaming(std::move(request), std::move(promise));
    });
  } catch (...) {
    promise.try_set_exception(std::current_exception());
  }
  return future;
}

Future<FullHttpResponse> HttpClient::Impl::execute(const Url& url, FullHttpRequest request) {
  if (!options.follow_redirects) return execute_once(url, std::move(request));
  auto state = std::make_shared<Redirects>();
  state->client = weak_from_this();
  state->url = url;
  state->method = request.method;
  state->version = request.version;
  state->headers = request.headers;
  state->body = request.content.share();
  Future<FullHttpResponse> first = execute_once(url, std::move(request));
  if (first.executor() == nullptr) return first;  // failed before it reached a loop
  state->clock = first.executor();
  state->deadline = state->clock->current_time_nanos() + options.request_timeout.count();
  state->result = Promise<FullHttpResponse>(first.executor());
  Future<FullHttpResponse> result = state->result.future();
  follow(state, std::move(first));
  return result;
}

void HttpClient::Impl::close_all() {
  std::vector<std::shared_ptr<HttpConnectionPool>> all;
  {
    std::lock_guard lock(mutex);
    closed = true;
    for (auto& [key, pool] : pools) all.push_back(std::move(pool));
    pools.clear();
  }
  for (auto& pool : all) {
    EventExecutor& loop = pool->executor();
    if (loop.in_event_loop()) {
      pool->close();
      continue;
    }
    // Closed, and released, on its own loop.
    std::shared_ptr<HttpConnectionPool> shared = pool;
    try {
      auto done = loop.submit([p = std::move(shared)]() mutable {
        p->close();
        p.reset();
      });
      done.wait_for(std::chrono::seconds(5));
    } catch (...) {
      // The loop was shut down first (its group's shutdown closed its channels); it takes no
      // more tasks and runs none, so the pool is released here.
    }
    pool.reset();
  }
}

HttpClient::HttpClient(EventLoopGroup& group, HttpClientOptions options)
    : impl_(std::make_shared<Impl>(group, options)) {}

HttpClient::HttpClient(HttpClientOptions options)
    : HttpClient(EventLoopGroup::singleton(), std::move(options)) {}

HttpClient::~HttpClient() { impl_->close_all(); }

void HttpClient::close() { impl_->close_all(); }

std::size_t HttpClient::pool_count() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->pools.size();
}

const HttpClientOptions& HttpClient::options() const noexcept { return impl_->options; }

Future<FullHttpResponse> HttpClient::execute(FullHttpRequest request) {
  Url url;
  try {
    url = destination_of(request);
  } catch (...) {
    return make_failed_future<FullHttpResponse>(std::current_exception());
  }
  return impl_->execute(url, std::move(request));
}

Future<FullHttpResponse> HttpClient::execute(HttpRequest request) {
  FullHttpRequest full;
  full.method = std::move(request.method);
  full.target = std::move(request.target);
  full.version = request.version;
  full.headers = std::move(request.headers);
  return execute(std::move(full));
}

Future<FullHttpResponse> HttpClient::get(std::string_view url_text) {
  Url url;
  try {
    url = Url::parse(url_text);
  } catch (...) {
    return make_failed_future<FullHttpResponse>(std::current_exception());
  }
  FullHttpRequest request;
  request.target = url.target;
  request.headers.add(HeaderId::kHost, url.host_header());
  return impl_->execute(url, std::move(request));
}

Task<FullHttpResponse> HttpClient::request(FullHttpRequest request) {
  co_return co_await execute(std::move(request));
}

Task<FullHttpResponse> HttpClient::request(HttpRequest request) {
  co_return co_await execute(std::move(request));
}

Task<StreamingHttpResponse> HttpClient::request_streaming(FullHttpRequest request) {
  const Url url = destination_of(request);
  co_return co_await impl_->execute_streaming(url, std::move(request));
}

Task<StreamingHttpResponse> HttpClient::request_streaming(HttpRequest request) {
  FullHttpRequest full;
  full.method = std::move(request.method);
  full.target = std::move(request.target);
  full.version = request.version;
  full.headers = std::move(request.headers);
  co_return co_await request_streaming(std::move(full));
}

}  // namespace trellis::http
