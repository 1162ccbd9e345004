// SwiftNIO's TCPEcho quartet over one loopback connection: the client writes the same 10,000-byte
// buffer N times (1,000,000 by default; shares of one ByteBuf, no copy per write) while the server
// echoes every read, until the client has received every byte. Four ways, each on one loop
// (client and server together) and on two (a loop each):
//
//   Pure                     handlers only (the client writes while writable and goes on at
//                            channel_writability_changed).
//   AsyncDefaultExecutor     AsyncChannel server `while (auto m = co_await in.next())
//                            co_await out.write(std::move(*m));` and an async client, their tasks
//                            on default_executor() (the process-wide pool): each AsyncChannel
//                            operation is awaited on the channel's loop (resume_on), and the task
//                            goes back to its executor with the result.
//   AsyncGlobalHook          the same code after install_event_loop_group_as_default_executor.
//   AsyncExecutorPreference  the same streams, the tasks spawned on the channel's loop.
//
// Counters for the whole run (bind to close): CPU time of the process, wall time, context
// switches (voluntary + involuntary, getrusage RUSAGE_SELF), heap allocations (all threads), and
// the thread hops the async tasks made. PingPong: one 64-byte message in flight, R round trips
// (100,000 by default): ns per round trip, Pure and AsyncExecutorPreference.
//
// The async clients' writes are AsyncWriteCompletion::queued (as SwiftNIO's NIOAsyncWriter: a
// write goes on once queued, several go out in one system call); --client_writes=written makes
// each write wait until the socket took it. The servers' echo writes wait (the default,
// AsyncWriteCompletion::written); --server_writes=queued makes them go on once queued as well.
//
//   bench_tcp_echo_async [--messages=N] [--round_trips=R] [--quick]
//                        [--client_writes=queued|written] [--server_writes=written|queued]
//                        [benchmark flags]
//
// --quick is --messages=100000 --round_trips=20000. The hook cannot be installed once
// default_executor() has handed out the pool, so AsyncGlobalHook runs before AsyncDefaultExecutor
// (its group uninstalls it when destroyed); benchmarks/run_echo_async_bench.sh runs each case in
// a process of its own.
#include <benchmark/benchmark.h>

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include <trellis/testing/allocation_counter.hpp>
#include <trellis/transport.hpp>

using namespace trellis;

namespace {

constexpr std::size_t kBufferBytes = 10'000;
constexpr std::size_t kPingBytes = 64;
std::size_t g_messages = 1'000'000;
std::size_t g_round_trips = 100'000;
// How the async clients' writes complete (--client_writes=queued|written).
AsyncWriteCompletion g_client_writes = AsyncWriteCompletion::queued;
AsyncWriteCompletion g_server_writes = AsyncWriteCompletion::written;

using EchoChannel = AsyncChannel<ByteBuf, ByteBuf>;

enum class Mode { Pure, AsyncDefaultExecutor, AsyncGlobalHook, AsyncExecutorPreference };

void pin_current_thread(int cpu) {
  if (std::thread::hardware_concurrency() < 2) return;
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
  void report(benchmark::State& state, double ops, const char* per_op) const {
    state.counters["cpu_ms"] = static_cast<double>(cpu_) / 1e6;
    state.counters["wall_ms"] = static_cast<double>(wall_) / 1e6;
    state.counters["ctx_switches"] = static_cast<double>(voluntary_ + involuntary_);
    state.counters["ctx_voluntary"] = static_cast<double>(voluntary_);
    state.counters["ctx_involuntary"] = static_cast<double>(involuntary_);
    state.counters["allocs"] = static_cast<double>(allocs_);
    if (per_op != nullptr) {
      state.counters[std::string("wall_ns_per_") + per_op] = static_cast<double>(wall_) / ops;
      state.counters[std::string("cpu_ns_per_") + per_op] = static_cast<double>(cpu_) / ops;
    }
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

// Thread hops of the async tasks: resume_on calls that had to post.
std::atomic<std::uint64_t> g_hops{0};

detail::ResumeOnAwaiter go_to(EventExecutor& target) {
  if (!target.in_event_loop()) g_hops.fetch_add(1, std::memory_order_relaxed);
  return resume_on(target);
}

// A group of `loops` loops, loop i pinned to CPU i.
std::unique_ptr<EventLoopGroup> make_group(int loops) {
  auto group = std::make_unique<EventLoopGroup>(static_cast<std::size_t>(loops));
  for (int i = 0; i < loops; ++i) {
    (*group)[static_cast<std::size_t>(i)].submit([i] { pin_current_thread(i); }).wait();
  }
  return group;
}

ByteBuf make_payload(std::size_t size) {
  std::string bytes(size, 'x');
  return ByteBuf::from(std::string_view(bytes));
}

// --- Pure: handlers only -------------------------------------------------------------------------

// Not the transport tests' EchoHandler (transport/tests/echo_handler.hpp), which flushes once per
// read batch and never stops reading: this one flushes each echo and holds reads back as the
// async server does, and records its loop for the two-loop check.
class EchoHandler final : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
  void handler_added(ChannelHandlerContext& ctx) override { loop_ = &ctx.channel().event_loop(); }
  // Echoes every read; stops reading while the echo cannot be written (as the async server,
  // whose awaited write holds it back), so memory stays bounded.
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    ctx.write_and_flush(std::move(msg));
    if (!ctx.channel().is_writable()) ctx.channel().config().set_auto_read(false);
  }
  void channel_writability_changed(ChannelHandlerContext& ctx) override {
    if (ctx.channel().is_writable()) ctx.channel().config().set_auto_read(true);
    ctx.fire_channel_writability_changed();
  }
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr) override { ctx.close(); }
  std::atomic<EventExecutor*> loop_{nullptr};
};

// Writes shares of payload, one flush each, while the channel is writable, until `writes` went
// out; completes done once every byte came back.
class StreamClient final : public ChannelInboundHandler {
 public:
  StreamClient(const ByteBuf& payload, std::size_t writes, Promise<void> done)
      : payload_(payload),
        writes_(writes),
        expected_(writes * payload.readable_bytes()),
        done_(std::move(done)) {}
  void channel_active(ChannelHandlerContext& ctx) override {
    write_more(ctx);
    ctx.fire_channel_active();
  }
  void channel_writability_changed(ChannelHandlerContext& ctx) override {
    write_more(ctx);
    ctx.fire_channel_writability_changed();
  }
  void channel_read(ChannelHandlerContext&, Message msg) override {
    received_ += msg.get<ByteBuf>().readable_bytes();
    if (received_ == expected_) done_.try_set_value();
  }
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr e) override {
    done_.try_set_exception(e);
    ctx.close();
  }

 private:
  void write_more(ChannelHandlerContext& ctx) {
    while (sent_ < writes_ && ctx.channel().is_writable()) {
      ctx.write_and_flush(Message(payload_.share()));
      ++sent_;
    }
  }
  const ByteBuf& payload_;
  std::size_t writes_;
  std::size_t expected_;
  Promise<void> done_;
  std::size_t sent_ = 0;
  std::size_t received_ = 0;
};

// One kPingBytes message in flight: the next goes out when the last came back.
class PingPongClient final : public ChannelInboundHandler {
 public:
  PingPongClient(const ByteBuf& payload, std::size_t trips, Promise<void> done)
      : payload_(payload), trips_(trips), done_(std::move(done)) {}
  void channel_active(ChannelHandlerContext& ctx) override {
    ctx.write_and_flush(Message(payload_.share()));
    ctx.fire_channel_active();
  }
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    pending_ += msg.get<ByteBuf>().readable_bytes();
    if (pending_ < kPingBytes) return;
    pending_ -= kPingBytes;
    if (++done_trips_ == trips_) {
      done_.try_set_value();
    } else {
      ctx.write_and_flush(Message(payload_.share()));
    }
  }
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr e) override {
    done_.try_set_exception(e);
    ctx.close();
  }

 private:
  const ByteBuf& payload_;
  std::size_t trips_;
  Promise<void> done_;
  std::size_t pending_ = 0;
  std::size_t done_trips_ = 0;
};

template <class Client>
void run_pure(benchmark::State& state, int loops, std::size_t payload_bytes, std::size_t count,
              const char* per_op) {
  auto group = make_group(loops);
  const ByteBuf payload = make_payload(payload_bytes);
  RunCounters counters;
  counters.start();
  {
    auto echo = std::make_shared<EchoHandler>();
    auto server = ServerBootstrap().group(*group).child_handler(echo).bind("127.0.0.1", 0).get();
    Promise<void> done;
    Future<void> finished = done.future();
    auto client = Bootstrap()
                      .group(*group)
                      .handler(std::make_shared<Client>(payload, count, std::move(done)))
                      .connect("127.0.0.1", server->local_address()->port())
                      .get();
    finished.get();
    client->close();
    client->close_future().wait();
    server->close();
    server->close_future().wait();
    if (loops > 1 && echo->loop_.load() == &client->event_loop()) {
      state.SkipWithError("client and server child share a loop");
    }
  }
  counters.stop();
  counters.report(state, static_cast<double>(count), per_op);
}

// --- Async: AsyncChannel tasks
// ---------------------------------------------------------------------

// The echo server's connection, its task on the channel's loop.
Task<void> serve_on_loop(EchoChannel channel) {
  auto body = [](EchoChannel::Inbound& in, EchoChannel::Outbound& out) -> Task<void> {
    while (auto m = co_await in.next()) co_await out.write(std::move(*m));
  };
  co_await channel.execute_then_close(body);
}

// The same, its task on `home`: each AsyncChannel operation is awaited on the channel's loop and
// the task goes back to home with the result (no hop when home is that loop).
Task<void> serve_from(EchoChannel channel, EventExecutor& home) {
  EventExecutor& loop = channel.event_loop();
  for (;;) {
    co_await go_to(loop);
    std::optional<ByteBuf> m = co_await channel.inbound().next();
    co_await go_to(home);
    if (!m) break;
    co_await go_to(loop);
    co_await channel.outbound().write(std::move(*m));
    co_await go_to(home);
  }
  co_await go_to(loop);
  co_await channel.close();
}

// Accepts one connection and serves it: on the channel's loop (home == nullptr) or from home.
Task<Future<void>> accept_one(AsyncServerChannel<ByteBuf, ByteBuf>& server, bool on_loop,
                              EventExecutor** child_loop) {
  auto child = co_await server.accept();
  if (!child) throw std::runtime_error("accept: the server closed");
  *child_loop = &child->event_loop();
  if (on_loop) co_return child->event_loop().spawn(serve_on_loop(std::move(*child)));
  EventExecutor& home = default_executor();
  co_return home.spawn(serve_from(std::move(*child), home));
}

// Reads until `expected` bytes came back (awaited on the loop, processed on home).
Task<void> read_echo(EchoChannel& channel, EventExecutor& home, std::size_t expected) {
  EventExecutor& loop = channel.event_loop();
  std::size_t received = 0;
  while (received < expected) {
    co_await go_to(loop);
    std::optional<ByteBuf> m = co_await channel.inbound().next();
    co_await go_to(home);
    if (!m) throw std::runtime_error("the echo ended early");
    received += m->readable_bytes();
  }
}

// The streaming client: a reader task next to the writing one (SwiftNIO's shape), both on home.
Task<void> stream_client(EchoChannel channel, EventExecutor& home, const ByteBuf& payload,
                         std::size_t writes) {
  EventExecutor& loop = channel.event_loop();
  Future<void> reading = home.spawn(read_echo(channel, home, writes * payload.readable_bytes()));
  for (std::size_t i = 0; i < writes; ++i) {
    co_await go_to(loop);
    co_await channel.outbound().write(payload.share());
    co_await go_to(home);
  }
  co_await reading;
  co_await go_to(loop);
  co_await channel.close();
}

// One message in flight, trips times.
Task<void> ping_pong_client(EchoChannel channel, EventExecutor& home, const ByteBuf& payload,
                            std::size_t trips) {
  EventExecutor& loop = channel.event_loop();
  const std::size_t size = payload.readable_bytes();
  for (std::size_t i = 0; i < trips; ++i) {
    co_await go_to(loop);
    co_await channel.outbound().write(payload.share());
    std::size_t received = 0;
    while (received < size) {
      std::optional<ByteBuf> m = co_await channel.inbound().next();
      if (!m) throw std::runtime_error("the echo ended early");
      received += m->readable_bytes();
    }
    co_await go_to(home);
  }
  co_await go_to(loop);
  co_await channel.close();
}

template <bool kPingPong>
void run_async(benchmark::State& state, Mode mode, int loops, std::size_t count,
               const char* per_op) {
  auto group = make_group(loops);
  if (mode == Mode::AsyncGlobalHook && !install_event_loop_group_as_default_executor(*group)) {
    state.SkipWithError(
        "install_event_loop_group_as_default_executor refused: default_executor() already handed "
        "out the pool (run AsyncGlobalHook in its own process)");
    return;
  }
  const ByteBuf payload = make_payload(kPingPong ? kPingBytes : kBufferBytes);
  const bool on_loop = mode == Mode::AsyncExecutorPreference;
  g_hops.store(0);
  RunCounters counters;
  counters.start();
  EventExecutor* child_loop = nullptr;
  EventExecutor* client_loop = nullptr;
  {
    auto server = ServerBootstrap()
                      .group(*group)
                      .bind_async<ByteBuf, ByteBuf>(
                          "127.0.0.1", 0, {.child = {.write_completion = g_server_writes}})
                      .get();
    Future<Future<void>> accepted =
        server.event_loop().spawn(accept_one(server, on_loop, &child_loop));
    EchoChannel client =
        Bootstrap()
            .group(*group)
            .connect_async<ByteBuf, ByteBuf>("127.0.0.1", server.local_address()->port(),
                                             {.write_completion = g_client_writes})
            .get();
    client_loop = &client.event_loop();
    // The child is taken (its loop chosen) before default_executor() picks the client task's loop
    // under the hook: the group's next() hands out loops in a fixed order then.
    Future<void> serving = accepted.get();
    EventExecutor& home = on_loop ? client.event_loop() : default_executor();
    Task<void> task = kPingPong ? ping_pong_client(std::move(client), home, payload, count)
                                : stream_client(std::move(client), home, payload, count);
    home.spawn(std::move(task)).get();
    serving.get();
    server.close().get();
  }
  counters.stop();
  counters.report(state, static_cast<double>(count), per_op);
  state.counters["thread_hops"] = static_cast<double>(g_hops.load());
  if (loops > 1 && child_loop == client_loop) {
    state.SkipWithError("client and server child share a loop");
  }
}

const char* loops_name(int loops) { return loops == 1 ? "OneLoop" : "TwoLoops"; }

void register_stream(Mode mode, const char* name) {
  for (int loops : {1, 2}) {
    const std::string full = std::string("TCPEcho/") + name + "/" + loops_name(loops);
    benchmark::RegisterBenchmark(full.c_str(),
                                 [mode, loops](benchmark::State& state) {
                                   const auto n = static_cast<std::size_t>(state.range(0));
                                   for (auto _ : state) {
                                     if (mode == Mode::Pure) {
                                       run_pure<StreamClient>(state, loops, kBufferBytes, n,
                                                              nullptr);
                                     } else {
                                       run_async<false>(state, mode, loops, n, nullptr);
                                     }
                                   }
                                 })
        ->ArgName("writes")
        ->Arg(static_cast<std::int64_t>(g_messages))
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
}

void register_ping_pong(Mode mode, const char* name) {
  for (int loops : {1, 2}) {
    const std::string full = std::string("PingPong/") + name + "/" + loops_name(loops);
    benchmark::RegisterBenchmark(full.c_str(),
                                 [mode, loops](benchmark::State& state) {
                                   const auto n = static_cast<std::size_t>(state.range(0));
                                   for (auto _ : state) {
                                     if (mode == Mode::Pure) {
                                       run_pure<PingPongClient>(state, loops, kPingBytes, n, "rt");
                                     } else {
                                       run_async<true>(state, mode, loops, n, "rt");
                                     }
                                   }
                                 })
        ->ArgName("round_trips")
        ->Arg(static_cast<std::int64_t>(g_round_trips))
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
}

// Takes this binary's own flags out of argv.
void parse_flags(int& argc, char** argv) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--messages=", 0) == 0) {
      g_messages = std::strtoull(arg.c_str() + 11, nullptr, 10);
    } else if (arg.rfind("--round_trips=", 0) == 0) {
      g_round_trips = std::strtoull(arg.c_str() + 14, nullptr, 10);
    } else if (arg == "--client_writes=queued") {
      g_client_writes = AsyncWriteCompletion::queued;
    } else if (arg == "--client_writes=written") {
      g_client_writes = AsyncWriteCompletion::written;
    } else if (arg == "--server_writes=queued") {
      g_server_writes = AsyncWriteCompletion::queued;
    } else if (arg == "--server_writes=written") {
      g_server_writes = AsyncWriteCompletion::written;
    } else if (arg == "--quick") {
      g_messages = 100'000;
      g_round_trips = 20'000;
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
}

}  // namespace

int main(int argc, char** argv) {
  parse_flags(argc, argv);
  // The process's default logger is created on its first use (the server's bind logs at debug
  // level): a server sets its logging up once at start-up, so do that here, outside the runs,
  // as the loops are made outside them.
  spdlog::default_logger_raw();
  register_stream(Mode::Pure, "Pure");
  register_stream(Mode::AsyncExecutorPreference, "AsyncExecutorPreference");
  register_ping_pong(Mode::Pure, "Pure");
  register_ping_pong(Mode::AsyncExecutorPreference, "AsyncExecutorPreference");
  // Before AsyncDefaultExecutor: the hook is refused once default_executor() handed out the pool.
  register_stream(Mode::AsyncGlobalHook, "AsyncGlobalHook");
  register_stream(Mode::AsyncDefaultExecutor, "AsyncDefaultExecutor");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
