// pingpong: the TCP echo load client of benchmarks/run_echo_bench.sh. Plain POSIX + epoll, one
// thread, no dependencies.
//
//   pingpong HOST PORT CONNS SECONDS [WARMUP_S=1] [MSG_BYTES=64]
//       CONNS connections, each with exactly one MSG_BYTES message in flight: send it, wait for
//       the whole echo, check every byte, send the next one. Round trips finishing in the first
//       WARMUP_S seconds are dropped, the next SECONDS are measured. Prints round trips/s and
//       the latency percentiles, then
//         RESULT conns=N secs=S roundtrips=R rtps=X p50_us=.. p99_us=.. p999_us=.. max_us=.. errors=E
//                total_roundtrips=T
//       (T: every round trip from the first connect to the end, warm-up included, so that a
//       count taken over the client's whole run, e.g. the server's system calls, can be divided
//       by it).
//
//   pingpong --stream HOST PORT [BYTES=1073741824] [CHUNK=65536]
//       One connection: writes BYTES in CHUNK-sized writes while reading the echo back at the
//       same time (non-blocking, both directions in one epoll loop), checks every echoed byte
//       against a deterministic pattern, then
//         RESULT stream bytes=B chunk=C seconds=T mb_per_s=X errors=E
//       (MB = 1e6 bytes; the clock runs from the first write to the last echoed byte). Fails if
//       no byte moves in either direction for 10 s (a server that stops reading or writing).
//
//   pingpong --idle HOST PORT CONNS HOLD_SECONDS
//       Raises RLIMIT_NOFILE to its hard limit, opens CONNS connections (at most 256 connecting
//       at once, so the listen backlog does not overflow), does one 1-byte round trip on each so
//       the server has surely accepted and registered it, prints "IDLE_READY conns=N" (flushed),
//       holds them HOLD_SECONDS, closes them and prints
//         IDLE_DONE conns=N closed_by_peer=K
//       (K: connections the server closed or reset while they were idle; non-zero fails).
//
// With PINGPONG_SERVER_PID=PID in the environment, the ping-pong and stream modes also read
// the server's CPU time (utime+stime of /proc/PID/stat, in clock ticks) at the start and the
// end of the measured window and add to RESULT
//   server_cpu_ticks=T clk_tck=HZ  and  server_cpu_ns_per_rt=..  (ping-pong)
//                                  or   server_cpu_ms_per_gib=.. (stream)
//
// Exit status: 0 on success, 1 on a connection error, a wrong echo byte or a timeout, 2 on bad
// arguments.
//   g++ -O2 -std=c++20 pingpong.cpp -o pingpong
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

[[noreturn]] void die(const char* fmt, const char* detail = nullptr) {
  std::fflush(stdout);
  std::fprintf(stderr, "pingpong: ");
  std::fprintf(stderr, fmt, detail ? detail : "");
  std::fprintf(stderr, "\n");
  std::exit(1);
}

bool parse_u64(const char* s, std::uint64_t& out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || s[0] == '-') return false;
  out = v;
  return true;
}

bool parse_double(const char* s, double& out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  out = std::strtod(s, &end);
  return *end == '\0' && out >= 0;
}

sockaddr_in resolve(const char* host, const char* port_text) {
  std::uint64_t port = 0;
  if (!parse_u64(port_text, port) || port == 0 || port > 65535) {
    std::fprintf(stderr, "pingpong: bad port %s\n", port_text);
    std::exit(2);
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, host, &sa.sin_addr) == 1) return sa;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host, nullptr, &hints, &res) != 0 || res == nullptr) {
    std::fprintf(stderr, "pingpong: cannot resolve %s to an IPv4 address\n", host);
    std::exit(2);
  }
  sa.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return sa;
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Raises the soft RLIMIT_NOFILE to the hard one; fails if even that is below `needed`.
void raise_fd_limit(std::uint64_t needed) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit want = rl;
    want.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
  }
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < needed) {
    std::fprintf(stderr,
                 "pingpong: need %llu file descriptors but RLIMIT_NOFILE is %llu (hard %llu); "
                 "raise the hard limit (ulimit -Hn) or use fewer connections\n",
                 static_cast<unsigned long long>(needed), static_cast<unsigned long long>(rl.rlim_cur),
                 static_cast<unsigned long long>(rl.rlim_max));
    std::exit(1);
  }
}

// CPU time (utime + stime, clock ticks) of the process in PINGPONG_SERVER_PID, or -1.
class ServerCpu {
 public:
  ServerCpu() {
    if (const char* p = std::getenv("PINGPONG_SERVER_PID"); p != nullptr && *p != '\0') {
      path_ = std::string("/proc/") + p + "/stat";
      if (ticks() < 0) {
        std::fprintf(stderr, "pingpong: cannot read %s (PINGPONG_SERVER_PID)\n", path_.c_str());
        std::exit(2);
      }
    }
  }
  bool enabled() const { return !path_.empty(); }
  long long ticks() const {
    if (path_.empty()) return -1;
    std::ifstream in(path_);
    std::string line;
    if (!std::getline(in, line)) return -1;
    // Field 2 (comm) is in parentheses and may hold spaces: skip past the last ')'. The rest
    // starts at field 3 (state); utime and stime are fields 14 and 15.
    const auto close = line.rfind(')');
    if (close == std::string::npos) return -1;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    long long utime = -1, stime = -1;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::atoll(field.c_str());
      if (i == 15) stime = std::atoll(field.c_str());
    }
    return (utime < 0 || stime < 0) ? -1 : utime + stime;
  }

 private:
  std::string path_;
};

// ------------------------------------------------------------------------------------------
// ping-pong

struct PingConn {
  int fd = -1;
  std::uint64_t seq = 0;   // message number on this connection; part of the byte pattern
  std::size_t sent = 0;    // bytes of the current message written
  std::size_t got = 0;     // bytes of its echo read
  std::int64_t sent_at = 0;
  bool want_out = false;   // EPOLLOUT registered (the message did not fit in one send)
  bool done = false;
};

// Byte j of message `seq` on connection `conn`: differs between messages and connections, so a
// stale, duplicated or misrouted echo is caught too.
inline char msg_byte(std::uint32_t conn, std::uint64_t seq, std::size_t j) {
  return static_cast<char>((j * 131 + seq * 7 + conn * 29 + (j >> 8)) & 0xff);
}

double percentile_us(const std::vector<std::uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  // Nearest rank: the smallest sample with at least p of all samples at or below it.
  auto rank = static_cast<std::size_t>(p * static_cast<double>(sorted.size()) + 0.999999);
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1] / 1000.0;
}

// Opens `n` TCP connections to `sa` with non-blocking connects, at most `window` in progress
// at once. Returns the connected, non-blocking fds; exits on any failure or after `timeout_s`.
std::vector<int> connect_all(const sockaddr_in& sa, std::size_t n, std::size_t window,
                             double timeout_s) {
  std::vector<int> fds;
  fds.reserve(n);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  std::size_t started = 0, in_progress = 0;
  std::vector<epoll_event> evs(window);
  const std::int64_t deadline = now_ns() + static_cast<std::int64_t>(timeout_s * 1e9);
  while (fds.size() < n) {
    while (started < n && in_progress < window) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) die("socket: %s", std::strerror(errno));
      ++started;
      if (connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0) {
        fds.push_back(fd);
        continue;
      }
      if (errno != EINPROGRESS) die("connect: %s", std::strerror(errno));
      epoll_event ev{};
      ev.events = EPOLLOUT;
      ev.data.fd = fd;
      epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
      ++in_progress;
    }
    if (in_progress == 0) continue;
    const int k = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 100);
    if (k < 0 && errno != EINTR) die("epoll_wait: %s", std::strerror(errno));
    for (int i = 0; i < k; ++i) {
      const int fd = evs[static_cast<std::size_t>(i)].data.fd;
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        std::fprintf(stderr, "pingpong: connect failed after %zu connections: %s\n", fds.size(),
                     std::strerror(err));
        std::exit(1);
      }
      epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
      --in_progress;
      fds.push_back(fd);
    }
    if (now_ns() > deadline) {
      std::fprintf(stderr, "pingpong: timed out connecting: %zu of %zu connected, %zu in progress\n",
                   fds.size(), n, in_progress);
      std::exit(1);
    }
  }
  close(ep);
  return fds;
}

int run_pingpong(int argc, char** argv) {
  std::uint64_t nconns = 0, msg = 64;
  double secs = 0, warm = 1.0;
  if (argc < 5 || !parse_u64(argv[3], nconns) || !parse_double(argv[4], secs) ||
      (argc > 5 && !parse_double(argv[5], warm)) || (argc > 6 && !parse_u64(argv[6], msg)) ||
      nconns < 1 || nconns > 1'000'000 || secs <= 0 || msg < 1 || msg > (64u << 20)) {
    std::fprintf(stderr, "usage: pingpong HOST PORT CONNS SECONDS [WARMUP_S=1] [MSG_BYTES=64]\n");
    return 2;
  }
  const sockaddr_in sa = resolve(argv[1], argv[2]);
  const ServerCpu server_cpu;
  raise_fd_limit(nconns + 16);

  const std::vector<int> fds = connect_all(sa, nconns, 256, 30.0);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  std::vector<PingConn> conns(nconns);
  for (std::size_t i = 0; i < nconns; ++i) {
    conns[i].fd = fds[i];
    set_nodelay(fds[i]);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<std::uint32_t>(i);
    epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
  }

  std::vector<char> out(msg), in(msg);
  std::vector<std::uint32_t> samples;
  samples.reserve(1 << 20);
  std::uint64_t errors = 0, measured = 0, total = 0;
  std::int64_t max_ns = 0;
  long long cpu_start = -1, cpu_end = -1;

  const std::int64_t t0 = now_ns();
  const std::int64_t t_meas = t0 + static_cast<std::int64_t>(warm * 1e9);
  const std::int64_t t_end = t_meas + static_cast<std::int64_t>(secs * 1e9);
  const std::int64_t t_giveup = t_end + 3'000'000'000LL;
  if (warm <= 0) cpu_start = server_cpu.ticks();

  std::size_t active = nconns;
  auto fail = [&](PingConn& c, const char* what, int err) {
    if (errors < 5) {
      std::fprintf(stderr, "pingpong: connection %zu: %s%s%s\n",
                   static_cast<std::size_t>(&c - conns.data()), what, err ? ": " : "",
                   err ? std::strerror(err) : "");
    }
    ++errors;
    c.done = true;
    --active;
    epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
  };
  auto set_out = [&](PingConn& c, bool want) {
    if (c.want_out == want) return;
    c.want_out = want;
    epoll_event ev{};
    ev.events = EPOLLIN | (want ? EPOLLOUT : 0u);
    ev.data.u32 = static_cast<std::uint32_t>(&c - conns.data());
    epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
  };
  // Writes what is left of the current message; false on a socket error.
  auto pump_out = [&](PingConn& c) -> bool {
    const auto id = static_cast<std::uint32_t>(&c - conns.data());
    while (c.sent < msg) {
      const std::size_t n = std::min<std::size_t>(msg - c.sent, out.size());
      for (std::size_t j = 0; j < n; ++j) out[j] = msg_byte(id, c.seq, c.sent + j);
      const ssize_t w = send(c.fd, out.data(), n, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) {
          set_out(c, true);
          return true;
        }
        fail(c, "send", errno);
        return false;
      }
      c.sent += static_cast<std::size_t>(w);
    }
    set_out(c, false);
    return true;
  };
  auto start_msg = [&](PingConn& c) {
    ++c.seq;
    c.sent = 0;
    c.got = 0;
    c.sent_at = now_ns();
    pump_out(c);
  };

  for (auto& c : conns) start_msg(c);
  std::vector<epoll_event> evs(std::min<std::size_t>(nconns, 4096));
  while (active > 0) {
    const int k = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 50);
    if (k < 0 && errno != EINTR) die("epoll_wait: %s", std::strerror(errno));
    const std::int64_t now = now_ns();
    if (cpu_start < 0 && now >= t_meas) cpu_start = server_cpu.ticks();
    if (now >= t_end && cpu_end < 0) cpu_end = server_cpu.ticks();
    if (now > t_giveup) {
      std::fprintf(stderr, "pingpong: giving up: %zu connection(s) still waiting for their echo\n",
                   active);
      errors += active;
      break;
    }
    for (int i = 0; i < k; ++i) {
      const epoll_event& ev = evs[static_cast<std::size_t>(i)];
      PingConn& c = conns[ev.data.u32];
      if (c.done) continue;
      if ((ev.events & EPOLLOUT) && !pump_out(c)) continue;
      if (!(ev.events & (EPOLLIN | EPOLLERR | EPOLLHUP))) continue;
      const ssize_t r = recv(c.fd, in.data(), msg - c.got, 0);
      if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (r < 0) {
        fail(c, "recv", errno);
        continue;
      }
      if (r == 0) {
        fail(c, "closed by the server", 0);
        continue;
      }
      // Check the bytes as they come (`in` is shared by all connections).
      const auto id = static_cast<std::uint32_t>(&c - conns.data());
      bool ok = c.got + static_cast<std::size_t>(r) <= c.sent;
      for (std::size_t j = 0; ok && j < static_cast<std::size_t>(r); ++j) {
        ok = in[j] == msg_byte(id, c.seq, c.got + j);
      }
      if (!ok) {
        fail(c, "echo does not match what was sent", 0);
        continue;
      }
      c.got += static_cast<std::size_t>(r);
      if (c.got < msg) continue;
      const std::int64_t t = now_ns();
      ++total;
      if (t >= t_meas && t < t_end) {
        ++measured;
        const std::int64_t lat = t - c.sent_at;
        max_ns = std::max(max_ns, lat);
        samples.push_back(static_cast<std::uint32_t>(std::min<std::int64_t>(lat, UINT32_MAX)));
      }
      if (t >= t_end) {
        c.done = true;
        --active;
        continue;
      }
      start_msg(c);
    }
  }
  if (cpu_end < 0) cpu_end = server_cpu.ticks();
  for (int fd : fds) close(fd);
  close(ep);

  std::sort(samples.begin(), samples.end());
  const double rtps = static_cast<double>(measured) / secs;
  const double p50 = percentile_us(samples, 0.50), p99 = percentile_us(samples, 0.99),
               p999 = percentile_us(samples, 0.999), mx = static_cast<double>(max_ns) / 1000.0;
  std::printf("pingpong %s:%s conns=%llu msg=%lluB warmup=%.1fs measured=%.1fs\n", argv[1], argv[2],
              static_cast<unsigned long long>(nconns), static_cast<unsigned long long>(msg), warm,
              secs);
  std::printf("  round trips: %llu (%.0f /s)  errors: %llu\n",
              static_cast<unsigned long long>(measured), rtps,
              static_cast<unsigned long long>(errors));
  std::printf("  latency us: p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n", p50, p99, p999, mx);
  std::string cpu;
  if (server_cpu.enabled() && cpu_start >= 0 && cpu_end >= 0) {
    const long hz = sysconf(_SC_CLK_TCK);
    const long long ticks = cpu_end - cpu_start;
    char buf[160];
    std::snprintf(buf, sizeof buf, " server_cpu_ticks=%lld clk_tck=%ld server_cpu_ns_per_rt=%.0f", ticks,
                  hz, measured ? static_cast<double>(ticks) * 1e9 / static_cast<double>(hz) /
                                     static_cast<double>(measured)
                               : 0.0);
    cpu = buf;
  }
  std::printf("RESULT conns=%llu secs=%.1f roundtrips=%llu rtps=%.0f p50_us=%.1f p99_us=%.1f "
              "p999_us=%.1f max_us=%.1f errors=%llu total_roundtrips=%llu%s\n",
              static_cast<unsigned long long>(nconns), secs,
              static_cast<unsigned long long>(measured), rtps, p50, p99, p999, mx,
              static_cast<unsigned long long>(errors), static_cast<unsigned long long>(total),
              cpu.c_str());
  return errors ? 1 : 0;
}

// ------------------------------------------------------------------------------------------
// stream

// The stream pattern: a table of kPeriod pseudo-random bytes, byte i of the stream being
// table[i % kPeriod]. kPeriod is prime, so no chunk or buffer size lines up with it and a lost,
// repeated or reordered block shows. The table is kPeriod + kIoMax long, so any run of up to
// kIoMax stream bytes is one contiguous slice of it: writes send straight from the table and
// the check is one memcmp per read.
constexpr std::size_t kPeriod = 1'000'003;
constexpr std::size_t kIoMax = 1 << 20;

std::vector<char> make_pattern() {
  std::vector<char> t(kPeriod + kIoMax);
  std::uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (std::size_t i = 0; i < kPeriod; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    t[i] = static_cast<char>((x >> 24) & 0xff);
  }
  for (std::size_t i = kPeriod; i < t.size(); ++i) t[i] = t[i - kPeriod];
  return t;
}

int run_stream(int argc, char** argv) {
  std::uint64_t total = 1ULL << 30, chunk = 65536;
  if (argc < 3 || (argc > 3 && !parse_u64(argv[3], total)) ||
      (argc > 4 && !parse_u64(argv[4], chunk)) || total == 0 || chunk == 0 || chunk > kIoMax) {
    std::fprintf(stderr, "usage: pingpong --stream HOST PORT [BYTES=1073741824] [CHUNK=65536] "
                         "(CHUNK <= %zu)\n", kIoMax);
    return 2;
  }
  const sockaddr_in sa = resolve(argv[1], argv[2]);
  const ServerCpu server_cpu;
  const std::vector<char> pattern = make_pattern();
  std::vector<char> in(256 * 1024);

  const int fd = connect_all(sa, 1, 1, 10.0).front();
  set_nodelay(fd);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT;
  epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);

  std::uint64_t written = 0, echoed = 0;
  bool want_out = true;
  const long long cpu_start = server_cpu.ticks();
  const std::int64_t t_start = now_ns();
  std::int64_t last_progress = t_start;
  constexpr std::int64_t kStall = 10'000'000'000LL;
  epoll_event got[1];
  while (echoed < total) {
    const int k = epoll_wait(ep, got, 1, 100);
    if (k < 0 && errno != EINTR) die("epoll_wait: %s", std::strerror(errno));
    const std::int64_t now = now_ns();
    if (k <= 0) {
      if (now - last_progress > kStall) {
        std::fprintf(stderr,
                     "pingpong: stream stalled: nothing moved for %.0f s; written %llu of %llu "
                     "bytes, echoed %llu (%llu in flight)\n",
                     kStall / 1e9, static_cast<unsigned long long>(written),
                     static_cast<unsigned long long>(total), static_cast<unsigned long long>(echoed),
                     static_cast<unsigned long long>(written - echoed));
        return 1;
      }
      continue;
    }
    // Read first: it frees the server to write, which frees it to read what we write next.
    if (got[0].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
      for (;;) {
        const ssize_t r = recv(fd, in.data(), in.size(), 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN) break;
        if (r <= 0) {
          std::fprintf(stderr, "pingpong: stream %s after %llu echoed bytes (%llu written)%s%s\n",
                       r == 0 ? "closed by the server" : "recv failed",
                       static_cast<unsigned long long>(echoed),
                       static_cast<unsigned long long>(written), r == 0 ? "" : ": ",
                       r == 0 ? "" : std::strerror(errno));
          return 1;
        }
        const auto n = static_cast<std::size_t>(r);
        if (echoed + n > written) {
          std::fprintf(stderr, "pingpong: got %llu echoed bytes but only %llu were written\n",
                       static_cast<unsigned long long>(echoed + n),
                       static_cast<unsigned long long>(written));
          return 1;
        }
        if (std::memcmp(in.data(), pattern.data() + echoed % kPeriod, n) != 0) {
          std::size_t j = 0;
          while (in[j] == pattern[(echoed + j) % kPeriod]) ++j;
          std::fprintf(stderr, "pingpong: echoed byte %llu is wrong\n",
                       static_cast<unsigned long long>(echoed + j));
          return 1;
        }
        echoed += n;
        last_progress = now;
        if (n < in.size()) break;
      }
    }
    if ((got[0].events & EPOLLOUT) && written < total) {
      for (;;) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, total - written));
        const ssize_t w = send(fd, pattern.data() + written % kPeriod, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EAGAIN) break;
        if (w < 0) {
          std::fprintf(stderr, "pingpong: send failed after %llu bytes: %s\n",
                       static_cast<unsigned long long>(written), std::strerror(errno));
          return 1;
        }
        written += static_cast<std::uint64_t>(w);
        last_progress = now;
        if (written == total || static_cast<std::size_t>(w) < n) break;
      }
    }
    if (want_out && written == total) {
      want_out = false;
      ev.events = EPOLLIN;
      epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
    }
  }
  const std::int64_t t_done = now_ns();
  const long long cpu_end = server_cpu.ticks();
  close(fd);
  close(ep);

  const double seconds = static_cast<double>(t_done - t_start) / 1e9;
  const double mbps = static_cast<double>(total) / 1e6 / seconds;
  std::printf("stream %s:%s bytes=%llu chunk=%llu: %.3f s, %.1f MB/s\n", argv[1], argv[2],
              static_cast<unsigned long long>(total), static_cast<unsigned long long>(chunk), seconds,
              mbps);
  std::string cpu;
  if (server_cpu.enabled()) {
    const long hz = sysconf(_SC_CLK_TCK);
    const long long ticks = cpu_end - cpu_start;
    char buf[160];
    std::snprintf(buf, sizeof buf, " server_cpu_ticks=%lld clk_tck=%ld server_cpu_ms_per_gib=%.1f",
                  ticks, hz,
                  static_cast<double>(ticks) * 1e3 / static_cast<double>(hz) /
                      (static_cast<double>(total) / static_cast<double>(1ULL << 30)));
    cpu = buf;
  }
  std::printf("RESULT stream bytes=%llu chunk=%llu seconds=%.3f mb_per_s=%.1f errors=0%s\n",
              static_cast<unsigned long long>(total), static_cast<unsigned long long>(chunk), seconds,
              mbps, cpu.c_str());
  return 0;
}

// ------------------------------------------------------------------------------------------
// idle

int run_idle(int argc, char** argv) {
  std::uint64_t nconns = 0;
  double hold = 0;
  if (argc < 5 || !parse_u64(argv[3], nconns) || !parse_double(argv[4], hold) || nconns < 1 ||
      nconns > 1'000'000) {
    std::fprintf(stderr, "usage: pingpong --idle HOST PORT CONNS HOLD_SECONDS\n");
    return 2;
  }
  const sockaddr_in sa = resolve(argv[1], argv[2]);
  raise_fd_limit(nconns + 16);

  // Per connection: connect (non-blocking), send 1 byte, read it back. At most kWindow
  // connections are between "connect started" and "echo received" at any time.
  constexpr std::size_t kWindow = 256;
  enum class State : std::uint8_t { connecting, waiting_echo, ready };
  std::vector<int> fds;
  std::vector<State> state;
  fds.reserve(nconns);
  state.reserve(nconns);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  std::size_t ready = 0, busy = 0;
  std::vector<epoll_event> evs(kWindow);
  const std::int64_t t0 = now_ns();
  const std::int64_t deadline = t0 + 120'000'000'000LL;
  const char probe = 'x';
  auto fail_conn = [&](std::size_t i, const char* what, int err) {
    std::fprintf(stderr, "pingpong: idle connection %zu (%zu ready): %s%s%s\n", i, ready, what,
                 err ? ": " : "", err ? std::strerror(err) : "");
    std::exit(1);
  };
  while (ready < nconns) {
    while (fds.size() < nconns && busy < kWindow) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) fail_conn(fds.size(), "socket", errno);
      const std::size_t i = fds.size();
      fds.push_back(fd);
      state.push_back(State::connecting);
      ++busy;
      epoll_event ev{};
      ev.data.u64 = i;
      if (connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0) {
        if (send(fd, &probe, 1, MSG_NOSIGNAL) != 1) fail_conn(i, "send", errno);
        state[i] = State::waiting_echo;
        ev.events = EPOLLIN;
      } else if (errno == EINPROGRESS) {
        ev.events = EPOLLOUT;
      } else {
        fail_conn(i, "connect", errno);
      }
      epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
    const int k = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 100);
    if (k < 0 && errno != EINTR) die("epoll_wait: %s", std::strerror(errno));
    for (int e = 0; e < k; ++e) {
      const auto i = static_cast<std::size_t>(evs[static_cast<std::size_t>(e)].data.u64);
      const int fd = fds[i];
      if (state[i] == State::connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) fail_conn(i, "connect", err);
        if (send(fd, &probe, 1, MSG_NOSIGNAL) != 1) fail_conn(i, "send", errno);
        state[i] = State::waiting_echo;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = i;
        epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
      } else if (state[i] == State::waiting_echo) {
        char c = 0;
        const ssize_t r = recv(fd, &c, 1, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (r < 0) fail_conn(i, "recv", errno);
        if (r == 0) fail_conn(i, "closed by the server before echoing", 0);
        if (c != probe) fail_conn(i, "wrong echo byte", 0);
        state[i] = State::ready;
        --busy;
        ++ready;
        // Stays in the epoll set, now only to notice the server closing it while idle.
        epoll_event ev{};
        ev.events = EPOLLRDHUP;
        ev.data.u64 = i;
        epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
      }
    }
    if (now_ns() > deadline) {
      std::fprintf(stderr, "pingpong: timed out: %zu of %llu connections ready, %zu in progress\n",
                   ready, static_cast<unsigned long long>(nconns), busy);
      return 1;
    }
  }
  const double setup_s = static_cast<double>(now_ns() - t0) / 1e9;
  std::fprintf(stderr, "pingpong: %llu idle connections ready in %.2f s\n",
               static_cast<unsigned long long>(nconns), setup_s);
  std::printf("IDLE_READY conns=%llu\n", static_cast<unsigned long long>(nconns));
  std::fflush(stdout);

  // Hold, watching for connections the server closes (EPOLLRDHUP / EPOLLHUP / EPOLLERR).
  std::vector<char> closed(nconns, 0);
  std::size_t closed_by_peer = 0;
  const std::int64_t t_release = now_ns() + static_cast<std::int64_t>(hold * 1e9);
  for (std::int64_t now = now_ns(); now < t_release; now = now_ns()) {
    const int timeout_ms = static_cast<int>(std::min<std::int64_t>((t_release - now) / 1'000'000 + 1, 1000));
    const int k = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), timeout_ms);
    for (int e = 0; e < k; ++e) {
      const auto i = static_cast<std::size_t>(evs[static_cast<std::size_t>(e)].data.u64);
      if (!closed[i]) {
        closed[i] = 1;
        ++closed_by_peer;
        epoll_ctl(ep, EPOLL_CTL_DEL, fds[i], nullptr);
      }
    }
  }
  for (int fd : fds) close(fd);
  close(ep);
  std::printf("IDLE_DONE conns=%llu closed_by_peer=%zu\n", static_cast<unsigned long long>(nconns),
              closed_by_peer);
  if (closed_by_peer != 0) {
    std::fprintf(stderr, "pingpong: the server closed %zu of the idle connections\n", closed_by_peer);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  if (argc > 1 && std::strcmp(argv[1], "--stream") == 0) return run_stream(argc - 1, argv + 1);
  if (argc > 1 && std::strcmp(argv[1], "--idle") == 0) return run_idle(argc - 1, argv + 1);
  if (argc > 1 && argv[1][0] == '-') {
    std::fprintf(stderr,
                 "usage: pingpong HOST PORT CONNS SECONDS [WARMUP_S=1] [MSG_BYTES=64]\n"
                 "       pingpong --stream HOST PORT [BYTES=1073741824] [CHUNK=65536]\n"
                 "       pingpong --idle HOST PORT CONNS HOLD_SECONDS\n");
    return 2;
  }
  return run_pingpong(argc, argv);
}
