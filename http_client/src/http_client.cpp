// HttpClient (see http_client.hpp): the pools, one per destination, and the connector that makes
// their sockets on the pool's loop.
#include <trellis/http_client/http_client.hpp>

#include <chrono>
#include <vector>

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
    url = Url::parse("http://" + std::string(host) + request.target);
  }
  if (!request.headers.contains(HeaderId::kHost)) {
    request.headers.add(HeaderId::kHost, url.host_header());
  }
  return url;
}

}  // namespace

HttpClient::HttpClient(EventLoopGroup& group, HttpClientOptions options)
    : group_(group), options_(options) {}

HttpClient::~HttpClient() {
  std::vector<std::shared_ptr<HttpConnectionPool>> pools;
  {
    std::lock_guard lock(mutex_);
    for (auto& [key, pool] : pools_) pools.push_back(std::move(pool));
    pools_.clear();
  }
  for (auto& pool : pools) {
    EventExecutor& loop = pool->executor();
    if (loop.in_event_loop()) {
      pool->close();
      continue;
    }
    // Closed, and released, on its own loop.
    auto done = loop.submit([p = std::move(pool)]() mutable {
      p->close();
      p.reset();
    });
    done.wait_for(std::chrono::seconds(5));
  }
}

std::shared_ptr<HttpConnectionPool> HttpClient::pool_for(const Url& url) {
  std::string key;
  key.reserve(url.host.size() + 8);
  key.append(url.host).push_back(':');
  key.append(std::to_string(url.port));
  std::lock_guard lock(mutex_);
  auto it = pools_.find(key);
  if (it != pools_.end()) return it->second;
  EventLoop& loop = group_.next();
  const auto connect_timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.connect_timeout);
  auto connector = [&loop, host = url.host, port = url.port,
                    connect_timeout](std::shared_ptr<ChannelHandler> init) {
    Bootstrap b;
    b.group(loop)
        .handler(std::move(init))
        .option(channel_option::tcp_nodelay, true)
        .option(channel_option::connect_timeout, connect_timeout);
    return b.connect(host, port);
  };
  auto pool =
      std::make_shared<HttpConnectionPool>(loop, url.host_header(), options_, std::move(connector));
  pools_.emplace(std::move(key), pool);
  return pool;
}

Future<FullHttpResponse> HttpClient::execute(const Url& url, FullHttpRequest request) {
  auto pool = pool_for(url);
  EventExecutor& loop = pool->executor();
  Promise<FullHttpResponse> promise(&loop);
  Future<FullHttpResponse> future = promise.future();
  if (loop.in_event_loop()) {
    pool->submit(std::move(request), std::move(promise));
  } else {
    loop.execute([pool = std::move(pool), request = std::move(request),
                  promise = std::move(promise)]() mutable {
      pool->submit(std::move(request), std::move(promise));
    });
  }
  return future;
}

Future<FullHttpResponse> HttpClient::execute(FullHttpRequest request) {
  Url url;
  try {
    url = destination_of(request);
  } catch (...) {
    return make_failed_future<FullHttpResponse>(std::current_exception());
  }
  return execute(url, std::move(request));
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
  return execute(url, std::move(request));
}

Task<FullHttpResponse> HttpClient::request(FullHttpRequest request) {
  co_return co_await execute(std::move(request));
}

Task<FullHttpResponse> HttpClient::request(HttpRequest request) {
  co_return co_await execute(std::move(request));
}

}  // namespace trellis::http
