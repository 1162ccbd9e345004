// TCP echo over loopback, in one process: a trellis echo server (pipeline, one loop) against
// a raw Asio echo server (one io_context, no framework). The client is blocking POSIX sockets
// on the benchmark thread doing ping-pong with 64-byte messages on 1 or 16 connections (one
// message in flight per connection). Server threads are pinned to CPU 0, the client to CPU 1.
// Counters: round trips/s, server CPU ns per round trip (process CPU minus the client
// thread's), heap allocations per round trip (all threads). The cross-process comparison with
// Netty is benchmarks/run_echo_bench.sh.
#include <benchmark/benchmark.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <ctime>
#include <memory>
#include <thread>
#include <vector>

#include <asio.hpp>

#include <trellis/testing/allocation_counter.hpp>
#include <trellis/transport.hpp>

#include "echo_handler.hpp"  // transport/tests: the echo tests' handler

using namespace trellis;

namespace {

constexpr std::size_t kMessage = 64;

void pin_current_thread(int cpu) {
  if (std::thread::hardware_concurrency() < 2) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

std::int64_t cpu_nanos(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

using test::EchoHandler;

// The raw Asio baseline: async_read_some, async_write, repeat (as benchmarks/peers/asio_echo.cpp).
class AsioSession : public std::enable_shared_from_this<AsioSession> {
 public:
  explicit AsioSession(asio::ip::tcp::socket s) : sock_(std::move(s)) {}
  void read() {
    sock_.async_read_some(asio::buffer(buf_),
                          [self = shared_from_this()](std::error_code ec, std::size_t n) {
                            if (!ec) self->write(n);
                          });
  }

 private:
  void write(std::size_t n) {
    asio::async_write(sock_, asio::buffer(buf_, n),
                      [self = shared_from_this()](std::error_code ec, std::size_t) {
                        if (!ec) self->read();
                      });
  }
  asio::ip::tcp::socket sock_;
  std::array<char, 16384> buf_;
};

class AsioEchoServer {
 public:
  AsioEchoServer() : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    accept();
    thread_ = std::thread([this] {
      pin_current_thread(0);
      io_.run();
    });
  }
  ~AsioEchoServer() {
    io_.stop();
    thread_.join();
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  void accept() {
    acceptor_.async_accept([this](std::error_code ec, asio::ip::tcp::socket s) {
      if (!ec) {
        s.set_option(asio::ip::tcp::no_delay(true), ec);
        std::make_shared<AsioSession>(std::move(s))->read();
      }
      accept();
    });
  }
  // One thread uses every I/O object: no reactor I/O locking (as trellis's event loops).
  asio::io_context io_{ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
};

class TrellisEchoServer {
 public:
  TrellisEchoServer() : group_(1) {
    group_[0].submit([] { pin_current_thread(0); }).wait();
    server_ = ServerBootstrap()
                  .group(group_)
                  .child_handler(std::make_shared<EchoHandler>())
                  .bind("127.0.0.1", 0)
                  .get();
  }
  ~TrellisEchoServer() {
    server_->close();
    server_->close_future().wait();
  }
  std::uint16_t port() const { return server_->local_address()->port(); }

 private:
  EventLoopGroup group_;
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

bool round_trip(const std::vector<int>& fds) {
  char out[kMessage];
  char in[kMessage];
  std::memset(out, 'x', sizeof out);
  for (int fd : fds) {
    if (::send(fd, out, sizeof out, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof out)) return false;
  }
  for (int fd : fds) {
    std::size_t got = 0;
    while (got < sizeof in) {
      const ssize_t r = ::recv(fd, in + got, sizeof in - got, 0);
      if (r <= 0) return false;
      got += static_cast<std::size_t>(r);
    }
  }
  return true;
}

template <class Server>
void BM_PingPong(benchmark::State& state) {
  pin_current_thread(1);
  Server server;
  std::vector<int> fds;
  for (int i = 0; i < state.range(0); ++i) fds.push_back(connect_to(server.port()));
  for (int fd : fds) {
    if (fd < 0) {
      state.SkipWithError("connect failed");
      return;
    }
  }
  for (int i = 0; i < 1000; ++i) round_trip(fds);  // warm-up
  const auto allocs = testing::total_allocations();
  const auto process_cpu = cpu_nanos(CLOCK_PROCESS_CPUTIME_ID);
  const auto client_cpu = cpu_nanos(CLOCK_THREAD_CPUTIME_ID);
  std::int64_t trips = 0;
  for (auto _ : state) {
    if (!round_trip(fds)) {
      state.SkipWithError("echo failed");
      break;
    }
    trips += static_cast<std::int64_t>(fds.size());
  }
  const auto server_cpu = (cpu_nanos(CLOCK_PROCESS_CPUTIME_ID) - process_cpu) -
                          (cpu_nanos(CLOCK_THREAD_CPUTIME_ID) - client_cpu);
  const auto allocations = testing::total_allocations() - allocs;
  for (int fd : fds) ::close(fd);
  state.SetItemsProcessed(trips);
  state.counters["rtps"] =
      benchmark::Counter(static_cast<double>(trips), benchmark::Counter::kIsRate);
  state.counters["server_cpu_ns_per_rt"] =
      static_cast<double>(server_cpu) / static_cast<double>(trips);
  state.counters["allocs_per_rt"] = static_cast<double>(allocations) / static_cast<double>(trips);
}

}  // namespace

BENCHMARK_TEMPLATE(BM_PingPong, TrellisEchoServer)->Arg(1)->Arg(16)->UseRealTime()->MinTime(2.0);
BENCHMARK_TEMPLATE(BM_PingPong, AsioEchoServer)->Arg(1)->Arg(16)->UseRealTime()->MinTime(2.0);

BENCHMARK_MAIN();
