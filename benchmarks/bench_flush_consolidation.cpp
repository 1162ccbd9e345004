// bench_flush_consolidation: what FlushConsolidationHandler saves an application that flushes
// every response, over a real loopback connection. The client (blocking POSIX socket, benchmark
// thread) sends a batch of pipelined 32-byte requests in one send() and reads all the answers;
// the trellis server (one loop) frames them with FixedLengthFrameDecoder and answers each with
// write_and_flush. Counters: flushes reaching the transport per request (each one that finds
// bytes queued is one send()/sendmsg() syscall), wall ns per request, server CPU ns per request.
#include <benchmark/benchmark.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <ctime>
#include <memory>
#include <vector>

#include <trellis/codec/fixed_length_frame_decoder.hpp>
#include <trellis/pipeline/flush_consolidation_handler.hpp>
#include <trellis/transport.hpp>

using namespace trellis;

namespace {

constexpr std::size_t kRequest = 32;

std::int64_t cpu_nanos(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

// Counts the flushes that pass it towards the transport (first in every pipeline).
class FlushCounter final : public ChannelOutboundHandler {
 public:
  std::atomic<std::int64_t> flushes{0};
  bool is_sharable() const noexcept override { return true; }
  void flush(ChannelHandlerContext& ctx) override {
    flushes.fetch_add(1, std::memory_order_relaxed);
    ctx.flush();
  }
};

// Answers each request with itself, flushed at once.
class FlushPerResponse final : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    ctx.write_and_flush(std::move(msg));
  }
};

class Server {
 public:
  explicit Server(bool consolidate) : group_(1) {
    auto counter = counter_;
    auto app = std::make_shared<FlushPerResponse>();
    server_ =
        ServerBootstrap()
            .group(group_)
            .child_handler(ChannelInitializer::from([=](Channel& ch) {
              ch.pipeline().add_last(counter);
              if (consolidate) {
                ch.pipeline().add_last(std::make_shared<FlushConsolidationHandler>());
              }
              ch.pipeline().add_last(std::make_shared<codec::FixedLengthFrameDecoder>(kRequest));
              ch.pipeline().add_last(app);
            }))
            .bind("127.0.0.1", 0)
            .get();
  }
  ~Server() {
    server_->close();
    server_->close_future().wait();
  }
  std::uint16_t port() const { return server_->local_address()->port(); }
  std::int64_t flushes() const { return counter_->flushes.load(std::memory_order_relaxed); }

 private:
  EventLoopGroup group_;
  std::shared_ptr<FlushCounter> counter_ = std::make_shared<FlushCounter>();
  std::shared_ptr<Channel> server_;
};

int connect_to(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One batch: `n` requests in one send, then every answer.
bool batch(int fd, std::vector<char>& out, std::vector<char>& in) {
  if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) {
    return false;
  }
  std::size_t got = 0;
  while (got < in.size()) {
    const ssize_t r = ::recv(fd, in.data() + got, in.size() - got, 0);
    if (r <= 0) return false;
    got += static_cast<std::size_t>(r);
  }
  return true;
}

void BM_PipelinedFlushPerResponse(benchmark::State& state, bool consolidate) {
  const auto pipelined = static_cast<std::size_t>(state.range(0));
  Server server(consolidate);
  const int fd = connect_to(server.port());
  if (fd < 0) {
    state.SkipWithError("connect failed");
    return;
  }
  std::vector<char> out(kRequest * pipelined, 'r');
  std::vector<char> in(out.size());
  for (int i = 0; i < 200; ++i) batch(fd, out, in);  // warm-up
  const auto flushes = server.flushes();
  const auto process_cpu = cpu_nanos(CLOCK_PROCESS_CPUTIME_ID);
  const auto client_cpu = cpu_nanos(CLOCK_THREAD_CPUTIME_ID);
  const auto wall = cpu_nanos(CLOCK_MONOTONIC);
  std::int64_t requests = 0;
  for (auto _ : state) {
    if (!batch(fd, out, in)) {
      state.SkipWithError("exchange failed");
      break;
    }
    requests += static_cast<std::int64_t>(pipelined);
  }
  const auto elapsed = cpu_nanos(CLOCK_MONOTONIC) - wall;
  const auto server_cpu = (cpu_nanos(CLOCK_PROCESS_CPUTIME_ID) - process_cpu) -
                          (cpu_nanos(CLOCK_THREAD_CPUTIME_ID) - client_cpu);
  ::close(fd);
  const auto n = static_cast<double>(requests);
  state.SetItemsProcessed(requests);
  state.counters["flushes_per_req"] = static_cast<double>(server.flushes() - flushes) / n;
  state.counters["ns_per_req"] = static_cast<double>(elapsed) / n;
  state.counters["server_cpu_ns_per_req"] = static_cast<double>(server_cpu) / n;
}

}  // namespace

BENCHMARK_CAPTURE(BM_PipelinedFlushPerResponse, plain, false)
    ->Arg(1)
    ->Arg(16)
    ->UseRealTime()
    ->MinTime(1.0);
BENCHMARK_CAPTURE(BM_PipelinedFlushPerResponse, consolidated, true)
    ->Arg(1)
    ->Arg(16)
    ->UseRealTime()
    ->MinTime(1.0);

BENCHMARK_MAIN();
