// What the HttpClient tests share: ChildServer, a server process started by a test (a Python
// script, the echo server) that prints the loopback port it listens on, killed by its PID when
// the test ends; and waits on a response future with a generous failure guard.
#pragma once

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <trellis/codec/http/http_message.hpp>
#include <trellis/pipeline/future.hpp>

namespace trellis::testing {

// A child process serving on an ephemeral loopback port it printed; killed by PID at the end.
class ChildServer {
 public:
  explicit ChildServer(std::vector<std::string> argv, bool port_line_has_text = false) {
    int out[2];
    REQUIRE(pipe(out) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    close(out[1]);
    FILE* in = fdopen(out[0], "r");
    char line[256] = {};
    // Failure guard only: the server prints its port as soon as it listens.
    REQUIRE(fgets(line, sizeof line, in) != nullptr);
    std::string text(line);
    // "http_echo_server listening on 127.0.0.1:PORT (N worker threads)"
    if (port_line_has_text) {
      text = text.substr(0, text.find(" ("));
      text = text.substr(text.find_last_of(':') + 1);
    }
    port_ = static_cast<std::uint16_t>(std::stoi(text));
    out_ = in;
  }
  ~ChildServer() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    if (out_) fclose(out_);
  }
  std::uint16_t port() const noexcept { return port_; }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
  FILE* out_ = nullptr;
};

// The response of f. Failure guard for waits: generous, never a timed assertion.
inline http::FullHttpResponse await(Future<http::FullHttpResponse> f) {
  REQUIRE(f.wait_for(std::chrono::seconds(60)));
  REQUIRE_MESSAGE(f.is_success(), "request failed");
  return std::move(f).get();
}

// The error f failed with, which must be an E.
template <class E>
E failure_of(Future<http::FullHttpResponse> f) {
  REQUIRE(f.wait_for(std::chrono::seconds(60)));
  REQUIRE_FALSE(f.is_success());
  try {
    std::rethrow_exception(f.cause());
  } catch (const E& e) {
    return e;
  } catch (const std::exception& other) {
    FAIL("unexpected error: " << other.what());
  }
  throw std::logic_error("unreachable");
}

}  // namespace trellis::testing
