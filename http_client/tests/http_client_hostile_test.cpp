// HttpClient against servers that misbehave, over loopback: a TLS port that never speaks,
// connections closed after every response without saying so, TLS connections closed without
// close_notify, redirects that leave TLS or the origin or go on too long, many destinations, and
// a group shut down before its client.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <trellis/http_client.hpp>
#include <trellis/ssl/ssl_context_builder.hpp>
#include <trellis/transport.hpp>

#include "child_server.hpp"
#include "test_pki.hpp"

using namespace trellis;
using namespace trellis::http;
using namespace std::chrono_literals;
using trellis::testing::await;
using trellis::testing::ChildServer;
using trellis::testing::failure_of;

namespace {

// A Python server, plain or TLS (argv: [cert key]). Paths:
//   /to/CODE?URL      redirect with CODE to URL (as given)
//   /slow/N           after 0.3 s, redirect 302 to /slow/N-1 (N > 0), else "done"
//   /headers          the names of the request's credential headers it got, comma-separated
//   /path/...         its own path
//   anything else     "ok"
// POST bodies are read and echoed as "POST <body>" by /headers and the default.
// With "close" as the last argument it closes the connection after each response without a
// Connection: close header (as a server does whose keep-alive is off without saying so).
constexpr const char* kServer = R"PY(
import http.server, ssl, sys, time, urllib.parse
close_each = sys.argv[-1] == "close"
args = [a for a in sys.argv[1:] if a != "close"]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def body(self, data, code=200, extra=()):
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra: self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        if close_each: self.close_connection = True
    def answer(self, payload=b""):
        path, _, query = self.path.partition("?")
        if path.startswith("/to/"):
            self.body(b"", int(path[4:].split("/")[0]), [("Location", urllib.parse.unquote(query))])
        elif path.startswith("/slow/"):
            time.sleep(0.3)
            n = int(path[6:])
            if n > 0: self.body(b"", 302, [("Location", "/slow/%d" % (n - 1))])
            else: self.body(b"done")
        elif path == "/headers":
            got = [h for h in ("Authorization", "Proxy-Authorization", "Cookie") if h in self.headers]
            self.body((",".join(got) + (" " + payload.decode() if payload else "")).encode())
        elif path.startswith("/path/"):
            self.body(path.encode())
        else:
            self.body(b"ok" if not payload else b"POST " + payload)
    def do_GET(self): self.answer()
    def do_POST(self):
        self.answer(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
class S(http.server.ThreadingHTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
if args:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args[0], args[1])
    s.socket = ctx.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
)PY";

// A TLS server whose keep-alive connections go stale: on each connection it answers the first
// request (with the client's port) and, at the second, closes the TCP connection without a byte
// of answer and without close_notify, as a server does that closed an idle connection.
constexpr const char* kStaleTlsServer = R"PY(
import socket, ssl, sys, threading
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
def serve(raw, port):
    try:
        conn = ctx.wrap_socket(raw, server_side=True)
    except (ssl.SSLError, OSError):
        raw.close()
        return
    data = b""
    answered = False
    while True:
        try:
            chunk = conn.recv(65536)
        except (ssl.SSLError, OSError):
            break
        if not chunk: break
        data += chunk
        while b"\r\n\r\n" in data:
            head, data = data.split(b"\r\n\r\n", 1)
            if answered:
                raw.close()  # the socket under the TLS layer: no close_notify
                return
            body = str(port).encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            answered = True
    raw.close()
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
while True:
    c, addr = s.accept()
    threading.Thread(target=serve, args=(c, addr[1]), daemon=True).start()
)PY";

std::string write_script(const char* name, const char* text) {
  const std::string path =
      "/tmp/trellis_http_client_hostile_" + std::string(name) + std::to_string(getpid()) + ".py";
  std::ofstream(path) << text;
  return path;
}

ChildServer server(std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{"python3", write_script("server", kServer)};
  for (auto& a : extra) argv.push_back(std::move(a));
  return ChildServer(std::move(argv));
}

ChildServer tls_server(std::vector<std::string> extra = {}) {
  const auto& pki = ssl::testing::test_pki();
  extra.insert(extra.begin(), {pki.server_cert, pki.server_key});
  return server(std::move(extra));
}

std::shared_ptr<const ssl::SslContext> trusting_test_ca() {
  return std::make_shared<const ssl::SslContext>(
      ssl::SslContextBuilder::for_client().trust_ca_file(ssl::testing::test_pki().ca_cert).build());
}

std::string url(const ChildServer& s, const std::string& path, bool https = false) {
  return std::string(https ? "https" : "http") + "://127.0.0.1:" + std::to_string(s.port()) + path;
}

FullHttpRequest post_to(const std::string& target, std::string body) {
  FullHttpRequest post;
  post.method = HttpMethod::kPost;
  post.target = target;
  post.content = ByteBuf::from(std::move(body));
  return post;
}

// A listener on 127.0.0.1 that accepts and never writes; it keeps every accepted socket.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 64) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentListener() {
    ::close(fd_);
    for (int fd : accepted_) ::close(fd);
  }
  std::uint16_t port() const noexcept { return port_; }
  // Accepts every connection waiting in the backlog.
  const std::vector<int>& accept_waiting() {
    pollfd p{fd_, POLLIN, 0};
    while (::poll(&p, 1, 0) == 1) {
      const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) break;
      accepted_.push_back(fd);
    }
    return accepted_;
  }
  // Reads fd to its end: true at EOF (or a reset) within the failure guard.
  static bool sees_eof(int fd) {
    char buf[4096];
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 10000) != 1) return false;
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return true;  // 0: EOF; < 0: reset
    }
  }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::vector<int> accepted_;
};

}  // namespace

TEST_CASE("HttpClient: connection attempts that time out in the TLS handshake are closed") {
  SilentListener listener;
  EventLoopGroup group(1);
  HttpClientOptions options;
  options.connect_timeout = 200ms;
  options.tls = trusting_test_ca();
  HttpClient client(group, options);
  std::vector<Future<FullHttpResponse>> requests;
  for (int i = 0; i < 10; ++i) {
    requests.push_back(client.get("https://127.0.0.1:" + std::to_string(listener.port()) + "/"));
  }
  for (auto& r : requests) {
    const auto e = failure_of<http::TimeoutError>(r);
    CHECK(e.phase() == http::TimeoutError::Phase::kConnect);
  }
  // Each accepted socket got a ClientHello and then, at its attempt's connect timeout, the end.
  const std::vector<int>& accepted = listener.accept_waiting();
  CHECK(accepted.size() >= 10);
  for (int fd : accepted) CHECK(SilentListener::sees_eof(fd));
}

TEST_CASE("HttpClient::close closes the connections being made") {
  SilentListener listener;
  EventLoopGroup group(1);
  HttpClientOptions options;
  options.tls = trusting_test_ca();
  HttpClient client(group, options);
  auto r = client.get("https://127.0.0.1:" + std::to_string(listener.port()) + "/");
  // Wait (bounded) until the connection was accepted, then close the client.
  for (int i = 0; i < 1000 && listener.accept_waiting().empty(); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(listener.accept_waiting().size() == 1);
  client.close();
  CHECK(SilentListener::sees_eof(listener.accept_waiting().front()));
  failure_of<ClosedChannelError>(std::move(r));
  failure_of<ClosedChannelError>(client.get("https://127.0.0.1:1/"));
}

TEST_CASE("HttpClient: a server that closes after every response without saying so") {
  ChildServer s = server({"close"});
  EventLoopGroup group(1);
  HttpClient client(group);
  SUBCASE("100 GETs in a row from another thread") {
    for (int i = 0; i < 100; ++i) {
      CAPTURE(i);
      CHECK(await(client.get(url(s, "/"))).content.to_string() == "ok");
    }
  }
  SUBCASE("50 GETs chained on the client's loop") {
    EventLoop& loop = group.next();
    auto chain = [&client, &s]() -> Task<int> {
      int ok = 0;
      for (int i = 0; i < 50; ++i) {
        HttpRequest request;
        request.target = url(s, "/");
        try {
          FullHttpResponse r = co_await client.request(std::move(request));
          if (r.content.to_string() == "ok") ++ok;
        } catch (const std::exception& e) {
          MESSAGE("request " << i << " failed: " << e.what());
        }
      }
      co_return ok;
    };
    Future<int> done = loop.spawn(chain());
    REQUIRE(done.wait_for(60s));
    CHECK(done.get() == 50);
  }
}

TEST_CASE("HttpClient: a TLS connection closed while idle without close_notify is retried") {
  const auto& pki = ssl::testing::test_pki();
  ChildServer s(
      {"python3", write_script("stale_tls", kStaleTlsServer), pki.server_cert, pki.server_key});
  EventLoopGroup group(1);
  HttpClientOptions options;
  options.tls = trusting_test_ca();
  HttpClient client(group, options);
  const std::string first = await(client.get(url(s, "/", true))).content.to_string();
  FullHttpResponse second = await(client.get(url(s, "/", true)));
  CHECK(second.status.code == 200);
  CHECK(second.content.to_string() != first);  // on a new connection
}

TEST_CASE("HttpClient redirects: https to http is refused unless allowed") {
  ChildServer secure = tls_server();
  ChildServer plain = server();
  EventLoopGroup group(1);
  HttpClientOptions options;
  options.follow_redirects = true;
  options.tls = trusting_test_ca();
  const std::string to_plain = url(secure, "/to/302?" + url(plain, "/path/landed"), true);
  {
    HttpClient client(group, options);
    failure_of<InsecureRedirectError>(client.get(to_plain));
    // Within TLS, and from http to https, redirects are followed.
    CHECK(await(client.get(url(secure, "/to/302?/path/tls", true))).content.to_string() ==
          "/path/tls");
    CHECK(await(client.get(url(plain, "/to/302?" + url(secure, "/path/up", true))))
              .content.to_string() == "/path/up");
  }
  options.allow_insecure_redirects = true;
  HttpClient client(group, options);
  CHECK(await(client.get(to_plain)).content.to_string() == "/path/landed");
}

TEST_CASE("HttpClient redirects: credentials and bodies stay with their origin") {
  ChildServer first = server();
  ChildServer other = server();
  EventLoopGroup group(1);
  HttpClientOptions options;
  options.follow_redirects = true;
  HttpClient client(group, options);
  auto with_credentials = [](FullHttpRequest r) {
    r.headers.add("Authorization", "Basic dXNlcjpwdw==");
    r.headers.add("Proxy-Authorization", "Basic cHJveHk6cHc=");
    r.headers.add("Cookie", "session=1");
    return r;
  };
  FullHttpRequest same;
  same.target = url(first, "/to/302?/headers");
  CHECK(await(client.execute(with_credentials(std::move(same)))).content.to_string() ==
        "Authorization,Proxy-Authorization,Cookie");
  FullHttpRequest cross;
  cross.target = url(first, "/to/302?" + url(other, "/headers"));
  CHECK(await(client.execute(with_credentials(std::move(cross)))).content.to_string().empty());
  // A 307/308 keeps the body within the origin, and is returned rather than followed to another.
  for (int code : {307, 308}) {
    CAPTURE(code);
    const std::string c = std::to_string(code);
    CHECK(await(client.execute(post_to(url(first, "/to/" + c + "?/headers"), "data")))
              .content.to_string() == " data");
    FullHttpResponse r =
        await(client.execute(post_to(url(first, "/to/" + c + "?" + url(other, "/headers")), "x")));
    CHECK(r.status.code == code);
  }
  // A relative reference with dot segments resolves against the request's URL (RFC 3986).
  CHECK(await(client.get(url(first, "/to/302/a/b?../../../path/x"))).content.to_string() ==
        "/path/x");
}

TEST_CASE("HttpClient redirects: request_timeout bounds the whole chain") {
  ChildServer s = server();
  EventLoopGroup group(1);
  HttpClientOptions options;
  options.follow_redirects = true;
  options.request_timeout = 1s;  // each hop takes 0.3 s
  HttpClient client(group, options);
  CHECK(await(client.get(url(s, "/slow/1"))).content.to_string() == "done");
  const auto e = failure_of<http::TimeoutError>(client.get(url(s, "/slow/4")));
  CHECK(e.phase() == http::TimeoutError::Phase::kRequest);
}

TEST_CASE("HttpClient: a pool unused for pool_idle_timeout is let go") {
  ChildServer s = server();
  EventLoopGroup group(1);
  HttpClientOptions options;
  options.pool_idle_timeout = 200ms;
  HttpClient client(group, options);
  const std::string port = std::to_string(s.port());
  CHECK(await(client.get("http://127.0.0.1:" + port + "/")).content.to_string() == "ok");
  CHECK(await(client.get("http://localhost:" + port + "/")).content.to_string() == "ok");
  CHECK(client.pool_count() == 2);
  // The idle connections close after 200 ms, then the pools go after 200 ms more.
  for (int i = 0; i < 1000 && client.pool_count() > 0; ++i) std::this_thread::sleep_for(10ms);
  CHECK(client.pool_count() == 0);
  // A new request makes a new pool.
  CHECK(await(client.get("http://127.0.0.1:" + port + "/")).content.to_string() == "ok");
  CHECK(client.pool_count() == 1);
}

TEST_CASE("HttpClient: its group shut down first") {
  ChildServer s = server();
  auto group = std::make_unique<EventLoopGroup>(1);
  auto client = std::make_unique<HttpClient>(*group);
  CHECK(await(client->get(url(s, "/"))).content.to_string() == "ok");
  group->shutdown_gracefully(0s, 5s).wait();
  // A request fails (the loop takes no more work) instead of throwing.
  Future<FullHttpResponse> after = client->get(url(s, "/"));
  REQUIRE(after.wait_for(10s));
  CHECK_FALSE(after.is_success());
  client.reset();  // neither terminates nor waits for a loop that is gone
  group.reset();
}
