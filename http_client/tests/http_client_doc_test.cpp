// The examples of docs/http.md's "The client" section, compiled and run as they appear there
// against http_echo_server.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include <trellis/http_client.hpp>
#include <trellis/transport.hpp>

namespace {

// --- docs/http.md: "The client" -------------------------------------------------------------
// Futures: execute (and get) return Future<FullHttpResponse>.
std::string fetch_with_future(trellis::http::HttpClient& client, const std::string& url) {
  return client.get(url).get().content.to_string();
}

// Coroutines: co_await client.request(...) inside a Task.
trellis::Task<std::string> fetch(trellis::http::HttpClient& client, std::string url) {
  trellis::http::HttpRequest req;
  req.target = std::move(url);  // an absolute URL, or a path and a Host header
  trellis::http::FullHttpResponse response = co_await client.request(std::move(req));
  co_return response.content.to_string();
}

// Streaming: the head first, then the body chunk by chunk as it arrives.
trellis::Task<std::size_t> count_body_bytes(trellis::http::HttpClient& client, std::string url) {
  trellis::http::HttpRequest req;
  req.target = std::move(url);
  trellis::http::StreamingHttpResponse response = co_await client.request_streaming(std::move(req));
  std::size_t bytes = 0;
  while (std::optional<trellis::ByteBuf> chunk = co_await response.body().next()) {
    bytes += chunk->readable_bytes();
  }
  co_return bytes;  // the connection went back to the pool with the end of the body
}
// --------------------------------------------------------------------------------------------

}  // namespace

#ifdef TRELLIS_HTTP_ECHO_SERVER
TEST_CASE("docs/http.md: the client examples fetch from http_echo_server") {
  if (std::string(TRELLIS_HTTP_ECHO_SERVER).empty()) return;
  int out[2];
  REQUIRE(pipe(out) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    execl(TRELLIS_HTTP_ECHO_SERVER, TRELLIS_HTTP_ECHO_SERVER, "--port", "0", "--threads", "1",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  FILE* in = fdopen(out[0], "r");
  char line[256] = {};
  REQUIRE(fgets(line, sizeof line, in) != nullptr);
  std::string text(line);
  text = text.substr(0, text.find(" ("));
  const std::string url =
      "http://127.0.0.1:" + text.substr(text.find_last_of(':') + 1) + "/plaintext";

  {
    trellis::EventLoopGroup group(1);
    trellis::http::HttpClient client(group);
    CHECK(fetch_with_future(client, url) == "Hello, World!");
    auto f = group.spawn(fetch(client, url));
    REQUIRE(f.wait_for(std::chrono::seconds(60)));
    CHECK(f.get() == "Hello, World!");
    auto n = group.spawn(count_body_bytes(client, url));
    REQUIRE(n.wait_for(std::chrono::seconds(60)));
    CHECK(n.get() == std::string("Hello, World!").size());
  }
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  fclose(in);
}
#endif
