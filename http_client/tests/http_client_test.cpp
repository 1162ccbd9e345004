// HttpClient against real servers over loopback: the trellis http_echo_server and a small
// Python http.server (standard library) started by the test, which records the client port of
// every request so that keep-alive reuse is checked on the server side.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <trellis/http_client.hpp>
#include <trellis/pipeline/detail/node_cache.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/transport.hpp>

#include "child_server.hpp"

using namespace trellis;
using namespace trellis::http;
using namespace std::chrono_literals;
using trellis::testing::await;
using trellis::testing::ChildServer;
using trellis::testing::failure_of;

namespace {

// The Python server: GET /port answers the client's port; /close answers with Connection:
// close; /chunked sends a chunked body; /cut announces 100 bytes and closes after 5; /silent
// never answers; anything else answers "ok". HTTP/1.1 keep-alive.
constexpr const char* kPythonServer = R"PY(
import http.server, socket, sys, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def send_body(self, body, extra=()):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra: self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
    def redirect(self, code, to):
        self.send_response(code)
        self.send_header("Location", to)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def do_GET(self):
        if self.path.startswith("/r/"):  # /r/CODE/rest: redirect with CODE to /rest
            code, rest = self.path[3:].split("/", 1)
            self.redirect(int(code), "/" + rest)
        elif self.path == "/loop":
            self.redirect(302, "/loop")
        elif self.path == "/relative/start":
            self.redirect(302, "method")
        elif self.path == "/relative/method":
            self.send_body(b"GET")
        elif self.path == "/port":
            self.send_body(str(self.client_address[1]).encode())
        elif self.path == "/close":
            self.send_body(b"bye", [("Connection", "close")])
            self.close_connection = True
        elif self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"chunk-one,", b"chunk-two"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/cut":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"12345")
            self.wfile.flush()
            self.close_connection = True
        elif self.path.startswith("/stream/"):  # /stream/N: N chunks "chunk-i," one by one
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(int(self.path[8:])):
                part = b"chunk-%d," % i
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/big":  # 8 MiB, more than the socket buffers hold
            size = 8 << 20
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            try:
                block = b"x" * 65536
                for _ in range(size // len(block)): self.wfile.write(block)
            except OSError:
                self.close_connection = True
        elif self.path == "/silent":
            time.sleep(30)
            self.close_connection = True
        else:
            self.send_body(b"ok")
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        if self.path.startswith("/r/"):
            code, rest = self.path[3:].split("/", 1)
            self.redirect(int(code), "/" + rest)
        else:
            self.send_body(b"POST " + body)
class S(http.server.ThreadingHTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
)PY";

std::string write_python_server() {
  const std::string path =
      "/tmp/trellis_http_client_test_server_" + std::to_string(getpid()) + ".py";
  std::ofstream(path) << kPythonServer;
  return path;
}

ChildServer python_server() { return ChildServer({"python3", write_python_server()}); }

// A server whose keep-alive connections go stale: on each connection it answers the first
// request (with the client's port) and closes at the second without a byte of answer, as a
// server does that closed an idle connection just as the client reused it.
constexpr const char* kStaleServer = R"PY(
import socket, threading
def serve(conn, port):
    data = b""
    answered = False
    while True:
        chunk = conn.recv(65536)
        if not chunk: break
        data += chunk
        while b"\r\n\r\n" in data:
            head, data = data.split(b"\r\n\r\n", 1)
            n = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"): n = int(line.split(b":")[1])
            data = data[n:]
            if answered:
                conn.close()
                return
            body = str(port).encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            answered = True
    conn.close()
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
while True:
    c, addr = s.accept()
    threading.Thread(target=serve, args=(c, addr[1]), daemon=True).start()
)PY";

}  // namespace

TEST_CASE("HttpClient: 100 requests to a Python http.server use one connection") {
  ChildServer server = python_server();
  EventLoopGroup group(1);
  HttpClient client(group);
  std::set<std::string> ports;
  for (int i = 0; i < 100; ++i) {
    FullHttpResponse r = await(client.get(server.url("/port")));
    CHECK(r.status.code == 200);
    ports.insert(r.content.to_string());
  }
  CHECK(ports.size() == 1);  // every request came from the same client port
}

TEST_CASE("HttpClient without a group runs on EventLoopGroup::singleton()") {
  ChildServer server = python_server();
  HttpClient client;  // the process-wide group
  FullHttpResponse r = await(client.get(server.url("/port")));
  CHECK(r.status.code == 200);
  auto on_singleton = [](HttpClient& c, std::string url) -> Task<bool> {
    FullHttpRequest request;
    request.target = std::move(url);
    (void)co_await c.request(std::move(request));
    co_return EventLoopGroup::singleton().contains_current_thread();
  };
  CHECK(EventLoopGroup::singleton().spawn(on_singleton(client, server.url("/port"))).get());
  client.close();
}

TEST_CASE("HttpClient: Connection: close, chunked bodies and POST bodies from http.server") {
  ChildServer server = python_server();
  EventLoopGroup group(1);
  HttpClient client(group);
  const std::string first_port = await(client.get(server.url("/port"))).content.to_string();
  FullHttpResponse closing = await(client.get(server.url("/close")));
  CHECK(closing.content.to_string() == "bye");
  // The connection was the one used before; it closed after "bye", so a new one is made.
  const std::string port_after = await(client.get(server.url("/port"))).content.to_string();
  CHECK(port_after != first_port);

  FullHttpResponse chunked = await(client.get(server.url("/chunked")));
  CHECK(chunked.content.to_string() == "chunk-one,chunk-two");

  FullHttpRequest post;
  post.method = HttpMethod::kPost;
  post.target = server.url("/echo");
  post.content = ByteBuf::from(std::string("a body of some bytes"));
  CHECK(await(client.execute(std::move(post))).content.to_string() == "POST a body of some bytes");
}

TEST_CASE("HttpClient: a server that closes mid-body fails with ConnectionClosedError") {
  ChildServer server = python_server();
  EventLoopGroup group(1);
  HttpClient client(group);
  auto e = failure_of<ConnectionClosedError>(client.get(server.url("/cut")));
  CHECK(e.may_have_been_processed());
  // The client goes on with a fresh connection.
  CHECK(await(client.get(server.url("/"))).content.to_string() == "ok");
}

TEST_CASE("HttpClient: a server that never answers fails with a request TimeoutError") {
  ChildServer server = python_server();
  EventLoopGroup group(1);
  HttpClientOptions options;
  options.request_timeout = 300ms;  // a short real timeout: this transport has no virtual time
  HttpClient client(group, options);
  auto e = failure_of<http::TimeoutError>(client.get(server.url("/silent")));
  CHECK(e.phase() == http::TimeoutError::Phase::kRequest);
}

TEST_CASE("HttpClient: a refused port fails with ConnectError carrying the error code") {
  // A port that was just free: bind an ephemeral port, note it, close it.
  std::uint16_t port = 0;
  {
    ChildServer probe({"python3", "-c",
                       "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); "
                       "print(s.getsockname()[1], flush=True); s.close()"});
    port = probe.port();
  }
  EventLoopGroup group(1);
  HttpClient client(group);
  auto e = failure_of<ConnectError>(client.get("http://127.0.0.1:" + std::to_string(port) + "/"));
  CHECK(e.code() == std::errc::connection_refused);
}

TEST_CASE("HttpClient: URLs it cannot use fail the future with UrlError") {
  EventLoopGroup group(1);
  HttpClient client(group);
  failure_of<UrlError>(client.get("ftp://127.0.0.1/"));
  failure_of<UrlError>(client.get("http://user@127.0.0.1/"));
  HttpRequest no_host;
  no_host.target = "/x";
  failure_of<UrlError>(client.execute(std::move(no_host)));
}

namespace {
Task<std::vector<std::string>> three_requests(HttpClient& client, std::string base,
                                              EventExecutor* expected_loop) {
  std::vector<std::string> bodies;
  for (const char* path : {"/plaintext", "/a", "/plaintext"}) {
    HttpRequest req;
    req.target = base + path;
    FullHttpResponse r = co_await client.request(std::move(req));
    // The coroutine stays on its loop: the connection's loop resumed it inline.
    CHECK(expected_loop->in_event_loop());
    bodies.push_back(r.content.to_string());
  }
  co_return bodies;
}
}  // namespace

namespace {
// Requests built before any counting: what the caller allocates to make them is its own.
std::vector<HttpRequest> plaintext_requests(const ChildServer& server, std::size_t n) {
  std::vector<HttpRequest> requests(n);
  for (auto& r : requests) {
    r.target = "/plaintext";
    r.headers.add(HeaderId::kHost, "127.0.0.1:" + std::to_string(server.port()));
  }
  return requests;
}

// The requests one after the other, each awaited on the client's loop; the allocations of the
// whole process from request `warm` on.
Task<std::uint64_t> allocations_awaiting(HttpClient& client, std::vector<HttpRequest>& requests,
                                         std::size_t warm) {
  std::uint64_t before = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (i == warm) before = testing::total_allocations();
    FullHttpResponse r = co_await client.request(std::move(requests[i]));
    if (r.status.code != 200) throw std::runtime_error("not 200");
  }
  co_return testing::total_allocations() - before;
}

// The same as a chain of futures: each request sent from the previous one's completion.
struct AllocationsChained {
  HttpClient& client;
  std::vector<HttpRequest>& requests;
  std::size_t warm;
  Promise<std::uint64_t> done;
  std::size_t next_index = 0;
  std::uint64_t before = 0;

  void next() {
    if (next_index == warm) before = testing::total_allocations();
    if (next_index == requests.size()) {
      done.set_value(testing::total_allocations() - before);
      return;
    }
    client.execute(std::move(requests[next_index++]))
        .add_listener([this](const Future<FullHttpResponse>& f) {
          if (!f.is_success()) {
            done.set_exception(f.cause());
            return;
          }
          next();
        });
  }
};
}  // namespace

#ifdef TRELLIS_HTTP_ECHO_SERVER
TEST_CASE("HttpClient: requests over a kept-alive connection allocate nothing in steady state") {
  if (std::string(TRELLIS_HTTP_ECHO_SERVER).empty()) return;
  REQUIRE(testing::allocation_hook_installed());
  ChildServer server({TRELLIS_HTTP_ECHO_SERVER, "--port", "0", "--threads", "1"}, true);
  EventLoopGroup group(1);
  HttpClient client(group);
  EventLoop& loop = group.next();
  constexpr std::size_t kWarm = 50;
  constexpr std::size_t kRequests = 250;

  auto requests = plaintext_requests(server, kRequests);
  auto awaited = loop.spawn(allocations_awaiting(client, requests, kWarm));
  REQUIRE(awaited.wait_for(60s));
  const std::uint64_t by_coroutine = std::move(awaited).get();

  auto more = plaintext_requests(server, kRequests);
  AllocationsChained chain{client, more, kWarm, Promise<std::uint64_t>(&loop)};
  auto chained = chain.done.future();
  loop.execute([&chain] { chain.next(); });
  REQUIRE(chained.wait_for(60s));
  // The wait can end while the loop is still inside done.set_value(): let that call return
  // before `chain`, which holds the promise, goes out of scope.
  loop.submit([] {}).wait();
  const std::uint64_t by_futures = std::move(chained).get();
#if TRELLIS_NODE_CACHE_ENABLED
  // The request's future, its coroutine frame, the exchange queued on the connection, the pool
  // lookup and the destination: all recycled or kept, none from the heap per request.
  CHECK(by_coroutine == 0);
  CHECK(by_futures == 0);
#else
  (void)by_coroutine;
  (void)by_futures;
#endif
}

TEST_CASE("HttpClient: both APIs against http_echo_server") {
  if (std::string(TRELLIS_HTTP_ECHO_SERVER).empty()) return;
  ChildServer server({TRELLIS_HTTP_ECHO_SERVER, "--port", "0", "--threads", "1"}, true);
  EventLoopGroup group(1);
  HttpClient client(group);
  FullHttpResponse r = await(client.get(server.url("/plaintext")));
  CHECK(r.status.code == 200);
  CHECK(r.content.to_string() == "Hello, World!");

  FullHttpRequest post;
  post.method = HttpMethod::kPost;
  post.target = server.url("/echo");
  post.headers.add(HeaderId::kTransferEncoding, "chunked");
  post.content = ByteBuf::from(std::string("chunked request body"));
  CHECK(await(client.execute(std::move(post))).content.to_string() == "chunked request body");

  HttpRequest head;
  head.method = HttpMethod::kHead;
  head.target = server.url("/plaintext");
  FullHttpResponse head_response = await(client.execute(std::move(head)));
  CHECK(head_response.status.code == 200);
  CHECK(head_response.content.readable_bytes() == 0);

  EventLoop& loop = group.next();
  auto bodies = loop.spawn(three_requests(client, server.url(""), &loop));
  REQUIRE(bodies.wait_for(60s));
  auto got = std::move(bodies).get();
  REQUIRE(got.size() == 3);
  CHECK(got[0] == "Hello, World!");
  CHECK(got[1].rfind("GET /a HTTP/1.1", 0) == 0);
  CHECK(got[2] == "Hello, World!");
}
#endif

namespace {
FullHttpRequest post_to(const std::string& url, std::string body) {
  FullHttpRequest post;
  post.method = HttpMethod::kPost;
  post.target = url;
  post.content = ByteBuf::from(std::move(body));
  return post;
}
}  // namespace

TEST_CASE("HttpClient: redirects are off by default and followed when asked for") {
  ChildServer server = python_server();
  EventLoopGroup group(1);
  {
    HttpClient plain(group);
    FullHttpResponse r = await(plain.get(server.url("/r/302/port")));
    CHECK(r.status.code == 302);
    CHECK(r.headers.get("Location") == std::optional<std::string_view>("/port"));
  }
  HttpClientOptions options;
  options.follow_redirects = true;
  HttpClient client(group, options);
  for (int code : {301, 302, 303, 307, 308}) {
    CAPTURE(code);
    FullHttpResponse r = await(client.get(server.url("/r/" + std::to_string(code) + "/port")));
    CHECK(r.status.code == 200);
  }
  // 301/302/303 become GET without the body; 307/308 keep the method and the body.
  for (int code : {301, 302, 303}) {
    CAPTURE(code);
    FullHttpResponse r = await(client.execute(
        post_to(server.url("/r/" + std::to_string(code) + "/relative/method"), "data")));
    CHECK(r.content.to_string() == "GET");
  }
  for (int code : {307, 308}) {
    CAPTURE(code);
    FullHttpResponse r =
        await(client.execute(post_to(server.url("/r/" + std::to_string(code) + "/echo"), "data")));
    CHECK(r.content.to_string() == "POST data");
  }
  // A relative Location resolves against the request's directory.
  CHECK(await(client.get(server.url("/relative/start"))).content.to_string() == "GET");
  // An endless loop stops after max_redirects.
  failure_of<TooManyRedirectsError>(client.get(server.url("/loop")));
}

TEST_CASE("HttpClient: Expect: 100-continue against http.server (which answers 100)") {
  ChildServer server = python_server();
  EventLoopGroup group(1);
  HttpClient client(group);
  FullHttpRequest post = post_to(server.url("/echo"), "sent after the interim response");
  post.headers.add("Expect", "100-continue");
  CHECK(await(client.execute(std::move(post))).content.to_string() ==
        "POST sent after the interim response");
  // The exchange was whole: the connection is reused.
  const std::string a = await(client.get(server.url("/port"))).content.to_string();
  const std::string b = await(client.get(server.url("/port"))).content.to_string();
  CHECK(a == b);
}

namespace {
// Reads a streamed body to the end on the connection's loop.
Task<std::string> read_streamed(HttpClient& client, std::string url, EventExecutor* loop) {
  HttpRequest req;
  req.target = std::move(url);
  StreamingHttpResponse response = co_await client.request_streaming(std::move(req));
  std::string body = std::to_string(response.status.code) + ":";
  int chunks = 0;
  while (std::optional<ByteBuf> chunk = co_await response.body().next()) {
    CHECK(loop->in_event_loop());
    body += chunk->to_string();
    ++chunks;
  }
  CHECK(chunks >= 1);
  co_return body;
}

// Reads the first chunk of a streamed body and drops the response.
Task<std::size_t> read_first_chunk(HttpClient& client, std::string url) {
  HttpRequest req;
  req.target = std::move(url);
  StreamingHttpResponse response = co_await client.request_streaming(std::move(req));
  std::optional<ByteBuf> chunk = co_await response.body().next();
  co_return chunk ? chunk->readable_bytes() : 0;
}

template <class T>
T run_on(EventLoop& loop, Task<T> task) {
  auto f = loop.spawn(std::move(task));
  REQUIRE(f.wait_for(60s));
  return std::move(f).get();
}
}  // namespace

TEST_CASE("HttpClient: a streamed body from http.server, then the connection is reused") {
  ChildServer server = python_server();
  EventLoopGroup group(1);
  HttpClient client(group);
  EventLoop& loop = group.next();
  const std::string before = await(client.get(server.url("/port"))).content.to_string();
  const std::string body = run_on(loop, read_streamed(client, server.url("/stream/20"), &loop));
  std::string expected = "200:";
  for (int i = 0; i < 20; ++i) expected += "chunk-" + std::to_string(i) + ",";
  CHECK(body == expected);
  // Read to the end: the connection went back to the pool.
  CHECK(await(client.get(server.url("/port"))).content.to_string() == before);
}

TEST_CASE("HttpClient: a streamed response dropped early closes its connection") {
  ChildServer server = python_server();
  EventLoopGroup group(1);
  HttpClient client(group);
  EventLoop& loop = group.next();
  const std::string before = await(client.get(server.url("/port"))).content.to_string();
  CHECK(run_on(loop, read_first_chunk(client, server.url("/big"))) > 0);
  // The rest of the 8 MiB was not read: that connection is gone, a new one serves this.
  CHECK(await(client.get(server.url("/port"))).content.to_string() != before);
}

TEST_CASE("HttpClient: a streamed body read from another executor") {
  ChildServer server = python_server();
  EventLoopGroup group(1);
  EventLoopGroup other(1);
  HttpClient client(group);
  EventLoop& reader = other.next();
  const std::string body = run_on(reader, read_streamed(client, server.url("/stream/5"), &reader));
  CHECK(body == "200:chunk-0,chunk-1,chunk-2,chunk-3,chunk-4,");
}

TEST_CASE("HttpClient: an idempotent request on a stale keep-alive connection is retried") {
  const std::string script =
      "/tmp/trellis_http_client_stale_server_" + std::to_string(getpid()) + ".py";
  std::ofstream(script) << kStaleServer;
  ChildServer server({"python3", script});
  EventLoopGroup group(1);
  HttpClient client(group);
  const std::string first = await(client.get(server.url("/"))).content.to_string();
  // The same connection is reused; the server closes it: sent again on a new connection.
  FullHttpResponse second = await(client.get(server.url("/")));
  CHECK(second.status.code == 200);
  CHECK(second.content.to_string() != first);
  // A POST is not sent twice: it fails, saying that it may have been processed.
  FullHttpRequest post = post_to(server.url("/"), "once");
  auto e = failure_of<ConnectionClosedError>(client.execute(std::move(post)));
  CHECK(e.may_have_been_processed());
}

TEST_CASE("HttpClient: pipelined requests against http.server") {
  ChildServer server = python_server();
  EventLoopGroup group(1);
  HttpClientOptions options;
  options.max_connections_per_host = 1;
  options.pipelining_depth = 8;
  HttpClient client(group, options);
  const std::string port = await(client.get(server.url("/port"))).content.to_string();
  std::vector<Future<FullHttpResponse>> responses;
  for (int i = 0; i < 20; ++i) {
    responses.push_back(client.get(server.url(i % 2 ? "/port" : "/chunked")));
  }
  for (int i = 0; i < 20; ++i) {
    const std::string body = await(responses[static_cast<std::size_t>(i)]).content.to_string();
    CHECK(body == (i % 2 ? port : "chunk-one,chunk-two"));
  }
}
