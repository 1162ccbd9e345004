// The logging half of run_logged (see detail/run_logged.hpp), out of line: only a job that threw
// gets here.
#include <trellis/pipeline/detail/run_logged.hpp>

#include <exception>

#include <spdlog/spdlog.h>

namespace trellis::detail {

void log_current_exception(const char* job) noexcept {
  try {
    throw;
  } catch (const std::exception& e) {
    spdlog::warn("trellis: {} threw: {}", job, e.what());
  } catch (...) {
    spdlog::warn("trellis: {} threw a non-standard exception", job);
  }
}

}  // namespace trellis::detail
