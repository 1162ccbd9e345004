// HttpClient against a server in another process (http_echo_server's /plaintext on loopback, as
// benchmarks/run_http_client_bench.sh starts it, pinned to the other core): N sequential GET
// requests over one keep-alive connection, four ways, and one concurrent case.
//
//   HttpClient/Futures                  the next request is sent from the previous one's
//                                       completion (a future listener, on the connection's loop)
//   HttpClient/CoroutineOnLoop          `co_await client.request(req)` in a task spawned on the
//                                       connection's loop (resumes inline, no hop)
//   HttpClient/CoroutineDefaultExecutor the same task spawned on default_executor() (the
//                                       process-wide pool): two thread hops per request
//   HttpClient/CoroutineGlobalHook      the same after install_event_loop_group_as_default_executor
//                                       (default_executor() is then the client's loop)
//   HttpClient/Concurrent50Pool8        50 requests in flight at once (50 futures chains) over a
//                                       pool of at most 8 connections
//
// The client's group has one loop, pinned to CPU --client_cpu (default 1). Before the counters
// start, one request opens the connection(s), so each case measures requests only. Counters for
// the measured part: wall_ms, cpu_ms (the whole client process: loop, pool threads, main),
// wall_ns_per_req, cpu_ns_per_req, allocs_per_req (operator new, all threads), ctx_switches
// (getrusage, voluntary + involuntary) and req_per_s.
//
//   bench_http_client [--url=URL | --url URL] [--requests=N | --requests N] [--quick]
//                     [--client_cpu=C] [benchmark flags]
//
// Defaults: --url=http://127.0.0.1:8080/plaintext, --requests=100000; --quick is 10,000. The hook
// cannot be installed once default_executor() has handed out the pool, so CoroutineGlobalHook is
// registered before CoroutineDefaultExecutor; the script runs each case in a process of its own.
#include <benchmark/benchmark.h>

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <trellis/http_client.hpp>
#include <trellis/testing/allocation_counter.hpp>
#include <trellis/transport.hpp>

using namespace trellis;
using namespace trellis::http;
using namespace std::chrono_literals;

namespace {

std::string g_url = "http://127.0.0.1:8080/plaintext";
std::size_t g_requests = 100'000;
int g_client_cpu = 1;

enum class Mode { Futures, CoroutineOnLoop, CoroutineDefaultExecutor, CoroutineGlobalHook };

void pin_current_thread(int cpu) {
  if (cpu < 0 || std::thread::hardware_concurrency() < 2) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

std::int64_t nanos(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

// The process's CPU time, wall time, context switches and allocations between start and stop.
class RunCounters {
 public:
  void start() {
    allocs_ = testing::total_allocations();
    getrusage(RUSAGE_SELF, &usage_);
    cpu_ = nanos(CLOCK_PROCESS_CPUTIME_ID);
    wall_ = nanos(CLOCK_MONOTONIC);
  }
  void stop() {
    wall_ = nanos(CLOCK_MONOTONIC) - wall_;
    cpu_ = nanos(CLOCK_PROCESS_CPUTIME_ID) - cpu_;
    rusage end{};
    getrusage(RUSAGE_SELF, &end);
    voluntary_ = end.ru_nvcsw - usage_.ru_nvcsw;
    involuntary_ = end.ru_nivcsw - usage_.ru_nivcsw;
    allocs_ = testing::total_allocations() - allocs_;
  }
  void report(benchmark::State& state, double requests) const {
    state.counters["wall_ms"] = static_cast<double>(wall_) / 1e6;
    state.counters["cpu_ms"] = static_cast<double>(cpu_) / 1e6;
    state.counters["wall_ns_per_req"] = static_cast<double>(wall_) / requests;
    state.counters["cpu_ns_per_req"] = static_cast<double>(cpu_) / requests;
    state.counters["req_per_s"] = requests * 1e9 / static_cast<double>(wall_);
    state.counters["allocs_per_req"] = static_cast<double>(allocs_) / requests;
    state.counters["ctx_switches"] = static_cast<double>(voluntary_ + involuntary_);
    state.counters["ctx_voluntary"] = static_cast<double>(voluntary_);
    state.counters["ctx_involuntary"] = static_cast<double>(involuntary_);
    state.SetIterationTime(static_cast<double>(wall_) / 1e9);
  }

 private:
  std::uint64_t allocs_ = 0;
  rusage usage_{};
  std::int64_t cpu_ = 0;
  std::int64_t wall_ = 0;
  long voluntary_ = 0;
  long involuntary_ = 0;
};

// A client on a group of one loop, pinned; one request made so the connection is open.
struct Setup {
  explicit Setup(HttpClientOptions options = {}) : group(1), client(group, options) {
    group[0].submit([] { pin_current_thread(g_client_cpu); }).wait();
    url = Url::parse(g_url);
  }
  HttpRequest request() const {
    HttpRequest r;
    r.target = url.target;
    r.headers.add(HeaderId::kHost, url.host_header());
    return r;
  }
  // A failure guard, not a timing: the server is expected to answer.
  void check(Future<FullHttpResponse> f) const {
    if (!f.wait_for(60s)) throw std::runtime_error("no response from " + g_url);
    if (std::move(f).get().status.code != 200) throw std::runtime_error("not 200 from " + g_url);
  }

  EventLoopGroup group;
  HttpClient client;
  Url url;
};

// Sends `left` requests one after the other, each from the previous one's completion.
class FuturesChain {
 public:
  FuturesChain(Setup& setup, std::size_t requests, Promise<void> done)
      : setup_(setup), left_(requests), done_(std::move(done)) {}
  void start() { next(); }

 private:
  void next() {
    setup_.client.execute(setup_.request()).add_listener([this](const Future<FullHttpResponse>& f) {
      if (!f.is_success()) {
        done_.try_set_exception(f.cause());
      } else if (--left_ == 0) {
        done_.try_set_value();
      } else {
        next();
      }
    });
  }
  Setup& setup_;
  std::size_t left_;
  Promise<void> done_;
};

// 50 chains that share one budget of requests; done when the last response came.
class SharedChains {
 public:
  SharedChains(Setup& setup, std::size_t requests, Promise<void> done)
      : setup_(setup), to_send_(requests), to_receive_(requests), done_(std::move(done)) {}
  void start(std::size_t chains) {
    for (std::size_t i = 0; i < chains && to_send_ > 0; ++i) next();
  }

 private:
  void next() {
    --to_send_;
    setup_.client.execute(setup_.request()).add_listener([this](const Future<FullHttpResponse>& f) {
      if (!f.is_success()) {
        done_.try_set_exception(f.cause());
        return;
      }
      if (--to_receive_ == 0) {
        done_.try_set_value();
      } else if (to_send_ > 0) {
        next();
      }
    });
  }
  Setup& setup_;
  std::size_t to_send_;
  std::size_t to_receive_;
  Promise<void> done_;
};

Task<void> sequential(Setup& setup, std::size_t requests) {
  for (std::size_t i = 0; i < requests; ++i) {
    FullHttpResponse response = co_await setup.client.request(setup.request());
    if (response.status.code != 200) throw std::runtime_error("not 200");
  }
}

void run_sequential(benchmark::State& state, Mode mode) {
  Setup setup;
  if (mode == Mode::CoroutineGlobalHook &&
      !install_event_loop_group_as_default_executor(setup.group)) {
    state.SkipWithError(
        "install_event_loop_group_as_default_executor refused: default_executor() already handed "
        "out the pool (run CoroutineGlobalHook in its own process)");
    return;
  }
  setup.check(setup.client.execute(setup.request()));
  const std::size_t n = g_requests;
  RunCounters counters;
  counters.start();
  if (mode == Mode::Futures) {
    Promise<void> done;
    Future<void> finished = done.future();
    FuturesChain chain(setup, n, std::move(done));
    setup.group[0].execute([&chain] { chain.start(); });
    finished.get();
  } else {
    EventExecutor& home = mode == Mode::CoroutineOnLoop
                              ? static_cast<EventExecutor&>(setup.group[0])
                              : default_executor();
    home.spawn(sequential(setup, n)).get();
  }
  counters.stop();
  counters.report(state, static_cast<double>(n));
}

void run_concurrent(benchmark::State& state, std::size_t in_flight, std::size_t pool) {
  HttpClientOptions options;
  options.max_connections_per_host = pool;
  Setup setup(options);
  // Open the pool's connections first: in_flight requests at once.
  {
    Promise<void> done;
    Future<void> opened = done.future();
    SharedChains warm(setup, in_flight, std::move(done));
    setup.group[0].execute([&warm, in_flight] { warm.start(in_flight); });
    opened.get();
  }
  const std::size_t n = g_requests;
  RunCounters counters;
  counters.start();
  Promise<void> done;
  Future<void> finished = done.future();
  SharedChains chains(setup, n, std::move(done));
  setup.group[0].execute([&chains, in_flight] { chains.start(in_flight); });
  finished.get();
  counters.stop();
  counters.report(state, static_cast<double>(n));
}

void register_sequential(Mode mode, const char* name) {
  benchmark::RegisterBenchmark((std::string("HttpClient/") + name).c_str(),
                               [mode](benchmark::State& state) {
                                 for (auto _ : state) run_sequential(state, mode);
                               })
      ->Iterations(1)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

// Takes this binary's own flags out of argv.
bool parse_flags(int& argc, char** argv) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const std::string& flag, std::string& into) {
      if (arg.rfind(flag + "=", 0) == 0) {
        into = arg.substr(flag.size() + 1);
        return true;
      }
      if (arg == flag && i + 1 < argc) {
        into = argv[++i];
        return true;
      }
      return false;
    };
    std::string v;
    if (value("--url", v)) {
      g_url = v;
    } else if (value("--requests", v)) {
      g_requests = std::strtoull(v.c_str(), nullptr, 10);
    } else if (value("--client_cpu", v)) {
      g_client_cpu = std::atoi(v.c_str());
    } else if (arg == "--quick") {
      g_requests = 10'000;
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  return g_requests > 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!parse_flags(argc, argv)) {
    std::fprintf(stderr, "bench_http_client: --requests must be at least 1\n");
    return 2;
  }
  register_sequential(Mode::Futures, "Futures");
  register_sequential(Mode::CoroutineOnLoop, "CoroutineOnLoop");
  // Before CoroutineDefaultExecutor: the hook is refused once default_executor() handed out the
  // pool.
  register_sequential(Mode::CoroutineGlobalHook, "CoroutineGlobalHook");
  register_sequential(Mode::CoroutineDefaultExecutor, "CoroutineDefaultExecutor");
  benchmark::RegisterBenchmark("HttpClient/Concurrent50Pool8",
                               [](benchmark::State& state) {
                                 for (auto _ : state) run_concurrent(state, 50, 8);
                               })
      ->Iterations(1)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
