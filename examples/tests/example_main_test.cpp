// The examples' command-line and bind helpers (examples/example_main.hpp): flags set and
// refused, and a failed bind reported.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <trellis/pipeline/promise.hpp>

#include "example_main.hpp"

using namespace std::chrono_literals;
using examples::Milliseconds;
using examples::read_flags;

namespace {

// A command line as main() gets it.
class Args {
 public:
  explicit Args(std::vector<std::string> args) : args_(std::move(args)) {
    for (auto& a : args_) argv_.push_back(a.data());
  }
  Args(std::initializer_list<std::string> args) : Args(std::vector<std::string>(args)) {}
  Args(const Args&) = delete;  // argv_ points into args_
  Args& operator=(const Args&) = delete;
  int argc() const { return static_cast<int>(argv_.size()); }
  char** argv() { return argv_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<char*> argv_;
};

// What std::cerr receives while it lives.
class CapturedCerr {
 public:
  CapturedCerr() : previous_(std::cerr.rdbuf(out_.rdbuf())) {}
  ~CapturedCerr() { std::cerr.rdbuf(previous_); }
  CapturedCerr(const CapturedCerr&) = delete;
  CapturedCerr& operator=(const CapturedCerr&) = delete;
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::streambuf* previous_;
};

struct Settings {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8007;
  std::size_t threads = 1;
  int idle = 300;
  bool report = false;
  std::chrono::nanoseconds timeout = 30s;
};

bool read(Settings& s, Args&& args) {
  return read_flags(args.argc(), args.argv(),
                    {{"--host", &s.host},
                     {"--port", &s.port},
                     {"--threads", &s.threads},
                     {"--idle", &s.idle},
                     {"--report", &s.report},
                     {"--timeout-ms", Milliseconds{&s.timeout}}},
                    "prog [--host H] [--port P]");
}

}  // namespace

TEST_CASE("read_flags sets the flags on the command line and leaves the others alone") {
  Settings s;
  CapturedCerr err;
  CHECK(read(s, {"prog", "--port", "0", "--report", "--timeout-ms", "250", "--host", "::1"}));
  CHECK(s.host == "::1");
  CHECK(s.port == 0);
  CHECK(s.report);
  CHECK(s.timeout == 250ms);
  CHECK(s.threads == 1);
  CHECK(s.idle == 300);
  CHECK(err.text().empty());

  Settings none;
  CHECK(read(none, {"prog"}));
  CHECK(none.port == 8007);
  CHECK_FALSE(none.report);
}

TEST_CASE("read_flags refuses an unknown flag, a missing value and a number it cannot store") {
  const std::vector<std::vector<std::string>> bad = {
      {"prog", "--verbose"},
      {"prog", "--port"},
      {"prog", "--port", "80x"},
      {"prog", "--port", ""},
      {"prog", "--port", "65536"},
      {"prog", "--threads", "-1"},
      {"prog", "--idle", "3000000000"},
      {"prog", "--timeout-ms", "ten"},
      {"prog", "8080"},
  };
  for (const auto& line : bad) {
    Settings s;
    CapturedCerr err;
    CAPTURE(line[1]);
    CHECK_FALSE(read(s, Args(line)));
    CHECK(err.text() == "usage: prog [--host H] [--port P]\n");
  }
}

TEST_CASE("bind_or_report hands over what the bind completed with") {
  auto channel = std::make_shared<int>(7);
  CHECK(examples::bind_or_report(trellis::make_ready_future<std::shared_ptr<int>>(channel),
                                 "prog") == channel);
  std::optional<std::string> server =
      examples::bind_or_report(trellis::make_ready_future<std::string>("bound"), "prog");
  CHECK(server == "bound");
}

TEST_CASE("bind_or_report prints why a bind failed and returns nothing") {
  CapturedCerr err;
  auto error = std::make_exception_ptr(std::runtime_error("bind to 127.0.0.1:80: denied"));
  CHECK(examples::bind_or_report(trellis::make_failed_future<std::shared_ptr<int>>(error),
                                 "echo_server") == nullptr);
  CHECK_FALSE(examples::bind_or_report(trellis::make_failed_future<std::string>(error), "rpc"));
  CHECK(err.text() ==
        "echo_server: bind to 127.0.0.1:80: denied\n"
        "rpc: bind to 127.0.0.1:80: denied\n");
}
