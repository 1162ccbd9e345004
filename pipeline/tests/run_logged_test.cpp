// run_logged, how the executors' threads run their jobs: what a job throws is logged with the
// job's name and swallowed, and the executor runs the jobs after it.
#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <trellis/pipeline/detail/run_logged.hpp>
#include <trellis/pipeline/thread_pool_executor.hpp>

using namespace trellis;
using namespace std::chrono_literals;

namespace {

// Sends what the default logger logs to a string while it lives ("level message" lines).
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    auto logger = std::make_shared<spdlog::logger>("captured", sink);
    logger->set_pattern("%l %v");
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  std::string text() const { return out_.str(); }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream out_;
};

}  // namespace

TEST_CASE("run_logged logs what a job throws, named, and swallows it") {
  CapturedLog log;
  UniqueFunction<void()> standard([] { throw std::runtime_error("disk on fire"); });
  UniqueFunction<void()> other([] { throw 42; });
  int runs = 0;
  UniqueFunction<void()> fine([&runs] { ++runs; });

  detail::run_logged(standard);
  detail::run_logged(other, "a blocker job");
  detail::run_logged(fine);

  CHECK(runs == 1);
  CHECK(log.text() ==
        "warning trellis: a task threw: disk on fire\n"
        "warning trellis: a blocker job threw a non-standard exception\n");
}

TEST_CASE("a job that throws on a ThreadPoolExecutor is logged and the next job runs") {
  CapturedLog log;
  std::promise<void> next_ran;
  {
    ThreadPoolExecutor pool(1, "run-logged-test");
    pool.execute([] { throw std::logic_error("bad job"); });
    pool.execute([&next_ran] { next_ran.set_value(); });
    REQUIRE(next_ran.get_future().wait_for(10s) == std::future_status::ready);
  }  // joined: the log is complete
  CHECK(log.text() == "warning trellis: a task threw: bad job\n");
}
