// Unix domain stream sockets: echo through ServerBootstrap/Bootstrap and raw clients,
// half-closure, and the LoggingHandler's hex dump on a live channel.
#include <doctest/doctest.h>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

// A fresh socket path, removed again when done.
struct SocketPath {
  SocketPath() {
    static int n = 0;
    path = "/tmp/trellis-uds-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
    ::unlink(path.c_str());
  }
  ~SocketPath() { ::unlink(path.c_str()); }
  std::string path;
};

}  // namespace

TEST_CASE("unix domain sockets echo through ServerBootstrap and Bootstrap") {
  SocketPath path;
  EventLoopGroup group(2);
  EchoServer server(group, "unix:" + path.path);
  CHECK(server.channel->local_address()->kind() == SocketAddress::Kind::kUnix);
  const std::string payload = random_bytes(1 << 20, 11);
  auto collector = std::make_shared<CollectHandler>(payload.size());
  auto ch = connect_client(group, 0, collector, "unix:" + path.path);
  CHECK(ch->remote_address()->path() == path.path);
  ch->write_and_flush(Message(to_buf(payload)));
  REQUIRE(collector->done().wait_for(kWait));
  CHECK(collector->bytes() == payload);
  ch->close();
  REQUIRE(ch->close_future().wait_for(kWait));
}

TEST_CASE("unix domain sockets serve raw clients and close on their FIN") {
  SocketPath path;
  EventLoopGroup group(1);
  EchoServer server(group, "unix:" + path.path);
  RawClient a(path.path);
  RawClient b(path.path);
  REQUIRE(a.send_all("first"));
  REQUIRE(b.send_all("second"));
  CHECK(b.recv_exact(6) == "second");
  CHECK(a.recv_exact(5) == "first");
  a.shutdown_write();
  char c;
  CHECK(a.recv_one(&c) == 0);  // the server closed
}

TEST_CASE("LoggingHandler forwards every event and dumps bytes in hex") {
  ByteBuf buf = ByteBuf::from(std::string_view("hello, world\x01"));
  const auto dump = LoggingHandler::hex_dump(buf);
  CHECK(dump.find("68 65 6c 6c 6f") != std::string::npos);
  CHECK(dump.find("|hello, world.|") != std::string::npos);
  SocketPath path;
  EventLoopGroup group(1);
  auto bound = ServerBootstrap()
                   .group(group)
                   .handler(std::make_shared<LoggingHandler>(spdlog::level::trace))
                   .child_handler(ChannelInitializer::from([](Channel& ch) {
                     ch.pipeline().add_last(std::make_shared<LoggingHandler>(spdlog::level::trace));
                     ch.pipeline().add_last(std::make_shared<EchoHandler>());
                   }))
                   .bind("unix:" + path.path, 0);
  REQUIRE(bound.wait_for(kWait));
  REQUIRE(bound.is_success());
  {
    RawClient client(path.path);
    REQUIRE(client.send_all("logged"));
    CHECK(client.recv_exact(6) == "logged");
  }
  bound.get()->close();
  REQUIRE(bound.get()->close_future().wait_for(kWait));
}
