// The HTTP client's errors (see http_client_errors.hpp).
#include <trellis/codec/http/http_client_errors.hpp>

namespace trellis::http {

const char* to_string(TimeoutError::Phase phase) noexcept {
  switch (phase) {
    case TimeoutError::Phase::kConnect:
      return "connect";
    case TimeoutError::Phase::kPoolWait:
      return "pool wait";
    case TimeoutError::Phase::kRequest:
      return "request";
    case TimeoutError::Phase::kRead:
      return "read";
  }
  return "?";
}

TimeoutError::TimeoutError(Phase phase, const std::string& what)
    : trellis::TimeoutError(std::string(to_string(phase)) + " timeout: " + what), phase_(phase) {}

}  // namespace trellis::http
