// Helpers of the socket transport tests: an echo handler (echo_handler.hpp), a collecting client
// handler, an echo server on an ephemeral loopback port and blocking raw-socket clients with
// timeouts.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <trellis/transport.hpp>

#include "echo_handler.hpp"

namespace trellis::test {

using namespace std::chrono_literals;
constexpr auto kWait = 10s;

// Collects the bytes a channel reads; completes `done` once `expected` bytes arrived.
class CollectHandler final : public ChannelInboundHandler {
 public:
  explicit CollectHandler(std::size_t expected) : expected_(expected) {}
  void channel_read(ChannelHandlerContext&, Message msg) override {
    auto& buf = msg.get<ByteBuf>();
    auto span = buf.readable_span();
    std::lock_guard lock(mutex_);
    bytes_.insert(bytes_.end(), reinterpret_cast<const char*>(span.data()),
                  reinterpret_cast<const char*>(span.data()) + span.size());
    if (bytes_.size() >= expected_) done_.try_set_value();
  }
  // Failed writes without a promise end up here; the tests check their promises instead.
  void exception_caught(ChannelHandlerContext&, std::exception_ptr) override {}
  void channel_inactive(ChannelHandlerContext& ctx) override {
    inactive_.try_set_value();
    ctx.fire_channel_inactive();
  }
  std::string bytes() {
    std::lock_guard lock(mutex_);
    return bytes_;
  }
  Future<void> done() const { return done_.future(); }
  Future<void> inactive() const { return inactive_.future(); }

 private:
  std::size_t expected_;
  std::mutex mutex_;
  std::string bytes_;
  Promise<void> done_;
  Promise<void> inactive_;
};

inline ByteBuf to_buf(const std::string& s) { return ByteBuf::from(std::string_view(s)); }

inline std::string random_bytes(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& c : s) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x);
  }
  return s;
}

// An echo server bound to 127.0.0.1 on an ephemeral port (or to `address`).
struct EchoServer {
  explicit EchoServer(EventLoopGroup& group, const std::string& host = "127.0.0.1") {
    auto f =
        ServerBootstrap().group(group).child_handler(std::make_shared<EchoHandler>()).bind(host, 0);
    REQUIRE(f.wait_for(kWait));
    REQUIRE(f.is_success());
    channel = f.get();
    port = channel->local_address()->port();
  }
  ~EchoServer() {
    channel->close();
    channel->close_future().wait_for(kWait);
  }
  std::shared_ptr<Channel> channel;
  std::uint16_t port = 0;
};

// A blocking client socket with 10 s send/receive timeouts. rcvbuf > 0 sets SO_RCVBUF before
// the connect (so the window the peer sees is small from the start).
class RawClient {
 public:
  explicit RawClient(std::uint16_t port, int family = AF_INET, int rcvbuf = 0) {
    fd_ = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int r;
    if (family == AF_INET) {
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_port = htons(port);
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      r = ::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    } else {
      sockaddr_in6 sa{};
      sa.sin6_family = AF_INET6;
      sa.sin6_port = htons(port);
      sa.sin6_addr = in6addr_loopback;
      r = ::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    }
    REQUIRE(r == 0);
  }
  explicit RawClient(const std::string& unix_path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, unix_path.c_str(), sizeof sa.sun_path - 1);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  }
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  int fd() const noexcept { return fd_; }
  bool send_all(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // Reads exactly n bytes (fewer on EOF, error or timeout).
  std::string recv_exact(std::size_t n) {
    std::string out(n, '\0');
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = ::recv(fd_, out.data() + got, n - got, 0);
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    out.resize(got);
    return out;
  }
  // 0 on EOF, -1 on error/timeout, else bytes read (at most 1).
  ssize_t recv_one(char* c) { return ::recv(fd_, c, 1, 0); }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  void reset() {
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// A Bootstrap-connected client; REQUIREs success.
inline std::shared_ptr<Channel> connect_client(EventLoopGroup& group, std::uint16_t port,
                                               std::shared_ptr<ChannelHandler> handler,
                                               const std::string& host = "127.0.0.1") {
  auto f = Bootstrap().group(group).handler(std::move(handler)).connect(host, port);
  REQUIRE(f.wait_for(kWait));
  REQUIRE(f.is_success());
  return f.get();
}

// Returns once every task queued on loop before the call has run. Under a manual clock that
// includes the work of every advance_by() that returned before: the timers it made due fired.
inline void settle(EventLoop& loop) {
  REQUIRE(loop.submit([] {}).wait_for(kWait));
}

// The number of tasks scheduled on loop (read on the loop).
inline std::size_t scheduled_count(EventLoop& loop) {
  auto f = loop.submit([&loop] { return loop.scheduled_task_count(); });
  REQUIRE(f.wait_for(kWait));
  return f.get();
}

}  // namespace trellis::test
