// Closing over loopback: half-close both ways, peer reset mid-write, writes after close, close
// from another thread while writing, connect timeout, and accept recovering from EMFILE.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>

#include <atomic>
#include <thread>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

// On a peer's FIN (half-closure allowed): answers "bye" and closes.
class ByeOnInputShutdown final : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    ctx.write_and_flush(std::move(msg));
  }
  void user_event_triggered(ChannelHandlerContext& ctx, Message event) override {
    if (event.is<ChannelInputShutdownEvent>()) {
      ++input_shutdowns;
      ctx.write_and_flush(Message(to_buf("bye")));
      ctx.close();
    }
  }
  std::atomic<int> input_shutdowns{0};
};

std::string read_to_eof(RawClient& client) {
  std::string out;
  char c;
  while (client.recv_one(&c) == 1) out.push_back(c);
  return out;
}

std::uint16_t listen_port(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  return ntohs(sa.sin_port);
}

int raw_listener(int backlog) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, backlog) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

TEST_CASE(
    "with allow_half_closure a peer's FIN fires ChannelInputShutdownEvent and output stays open") {
  EventLoopGroup group(1);
  auto handler = std::make_shared<ByeOnInputShutdown>();
  auto bound = ServerBootstrap()
                   .group(group)
                   .child_option(channel_option::allow_half_closure, true)
                   .child_handler(handler)
                   .bind("127.0.0.1", 0);
  REQUIRE(bound.wait_for(kWait));
  RawClient client(bound.get()->local_address()->port());
  REQUIRE(client.send_all("x"));
  client.shutdown_write();
  CHECK(read_to_eof(client) == "xbye");
  CHECK(handler->input_shutdowns == 1);
  bound.get()->close();
  REQUIRE(bound.get()->close_future().wait_for(kWait));
}

TEST_CASE("without allow_half_closure a peer's FIN closes the channel") {
  EventLoopGroup group(1);
  auto handler = std::make_shared<ByeOnInputShutdown>();
  auto bound = ServerBootstrap().group(group).child_handler(handler).bind("127.0.0.1", 0);
  REQUIRE(bound.wait_for(kWait));
  RawClient client(bound.get()->local_address()->port());
  REQUIRE(client.send_all("x"));
  client.shutdown_write();
  CHECK(read_to_eof(client) == "x");
  CHECK(handler->input_shutdowns == 0);
  bound.get()->close();
  REQUIRE(bound.get()->close_future().wait_for(kWait));
}

TEST_CASE("shutdown_output sends FIN while the channel still reads") {
  const int listener = raw_listener(4);
  REQUIRE(listener >= 0);
  EventLoopGroup group(1);
  auto collector = std::make_shared<CollectHandler>(1);
  auto f = Bootstrap()
               .group(group)
               .option(channel_option::allow_half_closure, true)
               .handler(collector)
               .connect("127.0.0.1", listen_port(listener));
  REQUIRE(f.wait_for(kWait));
  REQUIRE(f.is_success());
  const int peer = ::accept(listener, nullptr, nullptr);
  REQUIRE(peer >= 0);
  timeval tv{10, 0};
  ::setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  auto ch = std::static_pointer_cast<SocketChannel>(f.get());
  ch->write_and_flush(Message(to_buf("abc")));
  auto shut = ch->shutdown_output();
  REQUIRE(shut.wait_for(kWait));
  CHECK(shut.is_success());
  CHECK(ch->is_output_shutdown());
  std::string got;
  char c;
  while (::recv(peer, &c, 1, 0) == 1) got.push_back(c);
  CHECK(got == "abc");  // then EOF
  // Writing after shutdown_output fails.
  auto late = ch->new_promise();
  ch->write_and_flush(Message(to_buf("late")), late);
  REQUIRE(late.future().wait_for(kWait));
  CHECK_FALSE(late.is_success());
  // The input is still open.
  REQUIRE(::send(peer, "z", 1, MSG_NOSIGNAL) == 1);
  REQUIRE(collector->done().wait_for(kWait));
  CHECK(collector->bytes() == "z");
  CHECK(ch->is_active());
  ::close(peer);
  ::close(listener);
  ch->close();
  REQUIRE(ch->close_future().wait_for(kWait));
}

TEST_CASE("a peer reset mid-write becomes exception_caught and closes the channel") {
  struct Flood final : ChannelInboundHandler {
    void channel_active(ChannelHandlerContext& ctx) override {
      ByteBuf chunk = to_buf(random_bytes(64 * 1024, 5));
      for (int i = 0; i < 1024; ++i) ctx.write(Message(chunk.share()));
      last = ctx.new_promise();
      ctx.write_and_flush(Message(chunk.share()), last);
      active.try_set_value();
    }
    void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr) override {
      ++errors;
      ctx.close();
    }
    bool is_sharable() const noexcept override { return true; }
    ChannelPromise last;
    Promise<void> active;
    std::atomic<int> errors{0};
  };
  EventLoopGroup group(1);
  auto flood = std::make_shared<Flood>();
  Promise<std::shared_ptr<Channel>> child;
  auto bound = ServerBootstrap()
                   .group(group)
                   .child_handler(ChannelInitializer::from([flood, child](Channel& ch) mutable {
                     ch.pipeline().add_last(flood);
                     child.try_set_value(static_cast<SocketChannel&>(ch).shared_from_this());
                   }))
                   .bind("127.0.0.1", 0);
  REQUIRE(bound.wait_for(kWait));
  {
    RawClient client(bound.get()->local_address()->port());
    REQUIRE(flood->active.future().wait_for(kWait));
    CHECK(client.recv_exact(100'000).size() == 100'000);
    client.reset();
  }
  REQUIRE(child.future().wait_for(kWait));
  REQUIRE(child.future().get()->close_future().wait_for(kWait));
  REQUIRE(flood->last.future().wait_for(kWait));
  CHECK_FALSE(flood->last.is_success());
  CHECK(flood->errors >= 1);
  bound.get()->close();
  REQUIRE(bound.get()->close_future().wait_for(kWait));
}

TEST_CASE("writing to a closed channel fails with ClosedChannelError") {
  EventLoopGroup group(1);
  EchoServer server(group);
  auto ch = connect_client(group, server.port, std::make_shared<CollectHandler>(1));
  ch->close();
  REQUIRE(ch->close_future().wait_for(kWait));
  auto p = ch->new_promise();
  ch->write_and_flush(Message(to_buf("x")), p);
  REQUIRE(p.future().wait_for(kWait));
  REQUIRE_FALSE(p.is_success());
  CHECK_THROWS_AS(std::rethrow_exception(p.cause()), ClosedChannelError);
}

TEST_CASE("close from another thread while writing completes and fails later writes") {
  EventLoopGroup group(2);
  EchoServer server(group);
  auto ch = connect_client(group, server.port, std::make_shared<CollectHandler>(SIZE_MAX));
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    const std::string chunk = random_bytes(1024, 1);
    while (!stop) ch->write_and_flush(Message(to_buf(chunk)));
  });
  std::this_thread::sleep_for(50ms);
  std::thread closer([&] { ch->close(); });
  closer.join();
  REQUIRE(ch->close_future().wait_for(kWait));
  stop = true;
  writer.join();
  auto p = ch->new_promise();
  ch->write_and_flush(Message(to_buf("x")), p);
  REQUIRE(p.future().wait_for(kWait));
  CHECK_FALSE(p.is_success());
}

TEST_CASE("connect times out against a listener whose backlog is full, in virtual time") {
  const int listener = raw_listener(0);
  REQUIRE(listener >= 0);
  const auto port = listen_port(listener);
  // Fill the accept queue: later SYNs are dropped, so a connect hangs until it times out.
  std::vector<int> fillers;
  for (int i = 0; i < 8; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(50ms);  // lets the fillers' handshakes fill the queue
  auto clock = std::make_shared<ManualClock>();
  EventLoopGroup group(1, {.clock = clock});
  auto f = Bootstrap()
               .group(group)
               .option(channel_option::connect_timeout, std::chrono::milliseconds(300))
               .handler(std::make_shared<EchoHandler>())
               .connect("127.0.0.1", port);
  // The registration and the connect were queued on the loop: once they ran, the connect hangs
  // with its timeout armed at 300 ms on the manual clock.
  settle(group[0]);
  REQUIRE(scheduled_count(group[0]) == 1);
  clock->advance_by(300ms - 1ns);
  settle(group[0]);
  CHECK_FALSE(f.is_done());
  clock->advance_by(1ns);
  REQUIRE(f.wait_for(kWait));
  REQUIRE_FALSE(f.is_success());
  CHECK_THROWS_AS(std::rethrow_exception(f.cause()), ConnectTimeoutError);
  for (int fd : fillers) ::close(fd);
  ::close(listener);
}

TEST_CASE("accepting backs off on EMFILE for exactly its pause, in virtual time, and recovers") {
#if defined(__SANITIZE_ADDRESS__)
  // ASan's runtime needs descriptors of its own in the starved child and kills it; the test
  // runs in the plain and TSan builds.
  MESSAGE("skipped under AddressSanitizer");
  return;
#endif
  int to_child[2];
  int to_parent[2];
  REQUIRE(::pipe(to_child) == 0);
  REQUIRE(::pipe(to_parent) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Child: an echo server on a manual clock whose process has no descriptor left, until the
    // back-off began; it checks the pause and reports through its exit code.
    int code = 0;
    {
      rlimit rl{256, 256};
      ::setrlimit(RLIMIT_NOFILE, &rl);
      auto clock = std::make_shared<ManualClock>();
      EventLoopGroup group(1, {.clock = clock});
      auto bound = ServerBootstrap()
                       .group(group)
                       .child_handler(std::make_shared<EchoHandler>())
                       .bind("127.0.0.1", 0);
      if (!bound.wait_for(kWait) || !bound.is_success()) ::_exit(10);
      auto server = std::static_pointer_cast<ServerSocketChannel>(bound.get());
      std::vector<int> spare;
      for (int fd; (fd = ::dup(0)) >= 0;) spare.push_back(fd);
      const std::uint16_t port = server->local_address()->port();
      if (::write(to_parent[1], &port, sizeof port) != sizeof port) ::_exit(11);
      char go;
      if (::read(to_child[0], &go, 1) != 1) ::_exit(12);
      // The parent's clients are queued: the server hits EMFILE and backs off (a guard, not a
      // timing: the wait ends as soon as it happened).
      for (int i = 0; i < 1000 && server->accept_backoffs() == 0; ++i) {
        std::this_thread::sleep_for(10ms);
      }
      if (server->accept_backoffs() == 0) ::_exit(13);
      // The count is raised just before the pause is scheduled, in the same loop handler: once
      // a task queued now has run, the pause's end is on the clock, at kAcceptBackoff.
      auto timers = group[0].submit([&group] { return group[0].scheduled_task_count(); });
      if (!timers.wait_for(kWait)) ::_exit(20);
      if (timers.get() != 1) ::_exit(21);
      for (int fd : spare) ::close(fd);
      // The pause lasts kAcceptBackoff on the loop's clock: still paused 1 ns before its end.
      clock->advance_by(ServerSocketChannel::kAcceptBackoff - 1ns);
      if (!group[0].submit([] {}).wait_for(kWait)) ::_exit(14);
      if (!server->accept_paused()) code = 15;
      clock->advance_by(1ns);
      if (!group[0].submit([] {}).wait_for(kWait)) ::_exit(16);
      if (code == 0 && server->accept_paused()) code = 17;
      if (code == 0 && server->accept_backoffs() != 1) code = 18;
      // The parent reads its echoes, then says "q".
      if (::read(to_child[0], &go, 1) != 1) ::_exit(19);
      bound.get()->close();
      bound.get()->close_future().wait_for(kWait);
    }
    ::_exit(code);
  }
  // Only the child writes to the parent: a child that dies early is an EOF here, not a hang.
  // (The parent keeps the read end of its own pipe: a write to a dead child is no SIGPIPE.)
  ::close(to_parent[1]);
  std::uint16_t port = 0;
  REQUIRE(::read(to_parent[0], &port, sizeof port) == sizeof port);
  {
    std::vector<std::unique_ptr<RawClient>> clients;
    for (int i = 0; i < 3; ++i) clients.push_back(std::make_unique<RawClient>(port));
    for (auto& c : clients) REQUIRE(c->send_all("ping"));
    REQUIRE(::write(to_child[1], "g", 1) == 1);
    // Served once the pause ended on the child's clock.
    for (auto& c : clients) CHECK(c->recv_exact(4) == "ping");
  }
  REQUIRE(::write(to_child[1], "q", 1) == 1);
  int status = 0;
  for (int i = 0; i < 1000 && ::waitpid(pid, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  if (::waitpid(pid, &status, WNOHANG) == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL("EMFILE child did not exit");
  }
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  for (int fd : {to_child[0], to_child[1], to_parent[0]}) ::close(fd);
}
