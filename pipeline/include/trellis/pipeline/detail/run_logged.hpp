// run_logged: how the threads of trellis' executors (event loops, pools, blocker threads) run a
// job. What the job throws is logged at warning level and swallowed, so one failing job does
// not end the thread that runs all the others.
#pragma once

#include <trellis/pipeline/unique_function.hpp>

namespace trellis::detail {

// Logs the exception being handled as "trellis: <job> threw: <what()>" (or "trellis: <job>
// threw a non-standard exception"). Call it only from inside a catch block.
void log_current_exception(const char* job) noexcept;

// Runs fn; what it throws is logged (see log_current_exception, `job` names what ran) and
// swallowed. Inline, so that a job that does not throw costs only its own call.
inline void run_logged(UniqueFunction<void()>& fn, const char* job = "a task") noexcept {
  try {
    fn();
  } catch (...) {
    log_current_exception(job);
  }
}

}  // namespace trellis::detail
