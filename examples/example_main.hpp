// example_main.hpp: what the examples' main() functions have in common and is not about trellis:
// reading the command line's flags, waiting for Ctrl-C or SIGTERM, and reporting a failed bind.
// Each main() keeps what its example shows: the event loops, the bootstrap, the shutdown order.
#pragma once

#include <pthread.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include <trellis/pipeline/future.hpp>

namespace examples {

// A duration set from a number of milliseconds on the command line ("--send-timeout-ms 5000").
struct Milliseconds {
  std::chrono::nanoseconds* duration;
};

// One command-line flag and the variable it sets. A bool flag is a switch ("--report"); every
// other flag takes a value ("--port 8007"), a whole number >= 0 that fits the variable's type
// for a numeric variable.
struct Flag {
  const char* name;
  std::variant<std::string*, bool*, int*, long*, unsigned*, std::size_t*, std::uint16_t*,
               Milliseconds>
      target;
};

// Whole numbers >= 0 only: a port, a count or a timeout is never negative.
inline bool parse_whole_number(const char* text, unsigned long long& number) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value < 0) return false;
  number = static_cast<unsigned long long>(value);
  return true;
}

inline bool set_flag(std::string* target, const char* text) {
  *target = text;
  return true;
}
inline bool set_flag(Milliseconds target, const char* text) {
  unsigned long long ms = 0;
  if (!parse_whole_number(text, ms) || ms > 1'000'000'000'000) return false;  // 31 years
  *target.duration = std::chrono::milliseconds(ms);
  return true;
}
template <class T>
bool set_flag(T* target, const char* text) {
  unsigned long long number = 0;
  const auto max = static_cast<unsigned long long>(std::numeric_limits<T>::max());
  if (!parse_whole_number(text, number) || number > max) return false;
  *target = static_cast<T>(number);
  return true;
}

// Sets the variables of the flags on the command line (the others keep their defaults). On an
// unknown flag, a missing value or a bad number it prints "usage: <usage>" to stderr and
// returns false, and main() returns 2.
inline bool read_flags(int argc, char** argv, std::initializer_list<Flag> flags,
                       std::string_view usage) {
  for (int i = 1; i < argc; ++i) {
    const Flag* flag = nullptr;
    for (const Flag& f : flags) {
      if (argv[i] == std::string_view(f.name)) flag = &f;
    }
    bool ok = flag != nullptr;
    if (ok && std::holds_alternative<bool*>(flag->target)) {
      *std::get<bool*>(flag->target) = true;
    } else if (ok && ++i < argc) {
      const char* text = argv[i];
      ok = std::visit([text](auto target) { return set_flag(target, text); }, flag->target);
    } else {
      ok = false;
    }
    if (!ok) {
      std::cerr << "usage: " << usage << "\n";
      return false;
    }
  }
  return true;
}

// Ctrl-C and SIGTERM (and SIGHUP when asked: a server's "reload"), taken by main() instead of
// killing the process. Make it before the event loops: it blocks the signals in the calling
// thread, and the loops' threads inherit the mask, so none interrupts them. wait() returns the
// signal once one has come.
class StopSignals {
 public:
  explicit StopSignals(bool with_hangup = false) {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGINT);
    sigaddset(&signals_, SIGTERM);
    if (with_hangup) sigaddset(&signals_, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
  }

  int wait() const {
    int received = 0;
    sigwait(&signals_, &received);
    return received;
  }

 private:
  sigset_t signals_;
};

// What a bind completes with: std::shared_ptr<Channel> from bind() (null on failure), or
// std::optional<AsyncServerChannel<In, Out>> from bind_async() (empty on failure).
template <class T>
struct BindResult {
  using type = std::optional<T>;
};
template <class T>
struct BindResult<std::shared_ptr<T>> {
  using type = std::shared_ptr<T>;
};

// Waits for a bind. When it failed, prints "<program>: <the error>" to stderr and returns an
// empty result, and main() returns 1.
template <class T>
typename BindResult<T>::type bind_or_report(trellis::Future<T> bound, std::string_view program) {
  try {
    return std::move(bound).get();
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return {};
  }
}

}  // namespace examples
