// ServerBootstrap::bind_async and Bootstrap::connect_async over loopback: echo round trips,
// accept order, the end of accept() at close, child pipelines, connect errors and the accept
// buffer's back-pressure.
#include <doctest/doctest.h>

#include <sys/socket.h>

#include <string>
#include <thread>
#include <vector>

#include "tcp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

using Bytes = AsyncChannel<ByteBuf, ByteBuf>;
using BytesServer = AsyncServerChannel<ByteBuf, ByteBuf>;

std::string text_of(const ByteBuf& buf) {
  auto span = buf.readable_span();
  return std::string(reinterpret_cast<const char*>(span.data()), span.size());
}

// --- docs/coroutines.md: "Servers and clients" (as in examples/async_echo_server.cpp) -------
using EchoChannel = AsyncChannel<ByteBuf, ByteBuf>;

// One connection, on its own loop: every buffer read is written back; closes at the end.
Task<void> serve(EchoChannel channel) {
  auto body = [](EchoChannel::Inbound& in, EchoChannel::Outbound& out) -> Task<void> {
    while (auto m = co_await in.next()) co_await out.write(std::move(*m));
  };
  try {
    co_await channel.execute_then_close(body);
  } catch (const std::exception&) {
    // A reset or a failed write ends this connection only.
  }
}

// On the server channel's loop: hands each accepted connection to a task on the child's loop.
Task<void> accept_loop(AsyncServerChannel<ByteBuf, ByteBuf>& server) {
  while (auto child = co_await server.accept()) {
    EventExecutor& loop = child->event_loop();
    loop.spawn(serve(std::move(*child)));
  }
}

// A client: one request, the whole answer, close.
Task<std::string> ask(AsyncChannel<ByteBuf, ByteBuf> channel, std::string request) {
  co_await channel.outbound().write(ByteBuf::from(std::string_view(request)));
  std::string reply;
  while (reply.size() < request.size()) {
    auto buf = co_await channel.inbound().next();
    if (!buf) break;
    auto bytes = buf->readable_span();
    reply.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  co_await channel.close();
  co_return reply;
}
// --- end of docs/coroutines.md ---------------------------------------------------------------

// The accept loop, counting: every child is served on its own loop.
Task<int> accept_and_echo(BytesServer& server) {
  int served = 0;
  while (auto child = co_await server.accept()) {
    EventExecutor& loop = child->event_loop();
    loop.spawn(serve(std::move(*child)));
    ++served;
  }
  co_return served;
}

// A client: sends each message, then reads until all the bytes came back; returns them.
Task<std::string> send_and_collect(Bytes client, std::vector<std::string> messages) {
  std::size_t expected = 0;
  for (auto& m : messages) {
    expected += m.size();
    co_await client.outbound().write(to_buf(m));
  }
  std::string echoed;
  while (echoed.size() < expected) {
    auto m = co_await client.inbound().next();
    if (!m) break;
    echoed += text_of(*m);
  }
  co_await client.close();
  co_return echoed;
}

BytesServer bind_bytes(ServerBootstrap& bootstrap, AsyncServerChannelOptions options = {}) {
  auto f = bootstrap.bind_async<ByteBuf, ByteBuf>("127.0.0.1", 0, options);
  REQUIRE(f.wait_for(kWait));
  REQUIRE(f.is_success());
  return std::move(f).get();
}

// Polls cond (from this thread) for up to kWait.
template <class Cond>
bool eventually(Cond cond) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return cond();
}

// Turns each ByteBuf into a std::string: the child pipeline's own handler.
class BytesToString final : public ChannelInboundHandler {
 public:
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    ctx.fire_channel_read(Message(text_of(msg.get<ByteBuf>())));
  }
};

using Strings = AsyncChannel<std::string, ByteBuf>;

// On the child's loop: the child's handler names, then the text of n bytes it reads.
Task<std::vector<std::string>> names_then_text(Strings child, std::size_t n) {
  std::vector<std::string> out = child.channel().pipeline().names();
  std::string text;
  while (text.size() < n) {
    auto m = co_await child.inbound().next();  // a std::string: BytesToString ran first
    if (!m) break;
    text += *m;
  }
  out.push_back(text);
  co_return out;
}

std::uint16_t local_port_of(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  return ntohs(sa.sin_port);
}

}  // namespace

TEST_CASE("bind_async and connect_async echo a few messages between two AsyncChannels") {
  EventLoopGroup parent(1);
  EventLoopGroup children(2);
  ServerBootstrap bootstrap;
  bootstrap.group(parent, children);
  BytesServer server = bind_bytes(bootstrap);
  const std::uint16_t port = server.local_address()->port();
  CHECK(port != 0);
  auto served = server.event_loop().spawn(accept_and_echo(server));

  auto connected = Bootstrap().group(children).connect_async<ByteBuf, ByteBuf>("127.0.0.1", port);
  REQUIRE(connected.wait_for(kWait));
  REQUIRE(connected.is_success());
  Bytes client = std::move(connected).get();
  CHECK(client.channel().is_active());
  EventExecutor& client_loop = client.event_loop();
  const std::vector<std::string> messages{"one", "two", "three"};
  auto echoed = client_loop.spawn(send_and_collect(std::move(client), messages));
  REQUIRE(echoed.wait_for(kWait));
  CHECK(echoed.get() == "onetwothree");

  server.close().wait_for(kWait);
  REQUIRE(served.wait_for(kWait));
  CHECK(served.get() == 1);
}

TEST_CASE("accept() yields nullopt once the server channel is closed") {
  EventLoopGroup group(1);
  ServerBootstrap bootstrap;
  bootstrap.group(group);
  BytesServer server = bind_bytes(bootstrap);
  auto accept_one = [](BytesServer& s) -> Task<bool> {
    auto child = co_await s.accept();
    co_return child.has_value();
  };
  auto accepted = server.event_loop().spawn(accept_one(server));
  REQUIRE(server.close().wait_for(kWait));
  CHECK_FALSE(server.channel().is_open());
  REQUIRE(accepted.wait_for(kWait));
  CHECK_FALSE(accepted.get());
  // Later calls end at once too.
  auto again = server.event_loop().spawn(accept_one(server));
  REQUIRE(again.wait_for(kWait));
  CHECK_FALSE(again.get());
}

TEST_CASE("accept() hands out children in accept order, whichever loop they live on") {
  EventLoopGroup parent(1);
  EventLoopGroup children(3);
  ServerBootstrap bootstrap;
  bootstrap.group(parent, children);
  BytesServer server = bind_bytes(bootstrap);
  constexpr int kClients = 6;
  std::vector<std::unique_ptr<RawClient>> clients;
  std::vector<std::uint16_t> client_ports;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<RawClient>(server.local_address()->port()));
    client_ports.push_back(local_port_of(clients.back()->fd()));
  }
  auto accept_n = [](BytesServer& s, int n) -> Task<std::vector<std::uint16_t>> {
    std::vector<std::uint16_t> ports;
    for (int i = 0; i < n; ++i) {
      auto child = co_await s.accept();
      if (!child) break;
      ports.push_back(child->channel().remote_address()->port());
    }
    co_return ports;
  };
  auto ports = server.event_loop().spawn(accept_n(server, kClients));
  REQUIRE(ports.wait_for(kWait));
  CHECK(ports.get() == client_ports);
}

TEST_CASE("the child handler sets the child pipeline up before the AsyncChannel sees messages") {
  EventLoopGroup parent(1);
  EventLoopGroup children(2);
  ServerBootstrap bootstrap;
  bootstrap.group(parent, children).child_handler(ChannelInitializer::from([](Channel& ch) {
    ch.pipeline().add_last("to-string", std::make_shared<BytesToString>());
  }));
  auto bound = bootstrap.bind_async<std::string, ByteBuf>("127.0.0.1", 0);
  REQUIRE(bound.wait_for(kWait));
  REQUIRE(bound.is_success());
  AsyncServerChannel<std::string, ByteBuf> server = std::move(bound).get();

  // The client writes before the server accepts: the bytes wait until the child is wrapped.
  RawClient client(server.local_address()->port());
  REQUIRE(client.send_all("hello, pipeline"));
  auto accept_one =
      [](AsyncServerChannel<std::string, ByteBuf>& s) -> Task<std::vector<std::string>> {
    auto child = co_await s.accept();
    if (!child) co_return std::vector<std::string>{};
    EventExecutor& loop = child->event_loop();
    co_return co_await loop.spawn(names_then_text(std::move(*child), 15));
  };
  auto result = server.event_loop().spawn(accept_one(server));
  REQUIRE(result.wait_for(kWait));
  const std::vector<std::string> got = result.get();
  REQUIRE(got.size() >= 2);
  CHECK(got.back() == "hello, pipeline");
  // The initializer is gone; its handler comes before the AsyncChannel's at the tail.
  std::vector<std::string> names(got.begin(), got.end() - 1);
  CHECK(names == std::vector<std::string>{"to-string", "async-channel"});
}

TEST_CASE("connect_async to a closed port fails with the connect error") {
  EventLoopGroup group(1);
  // A port nobody listens on: bound once, then released.
  std::uint16_t port = 0;
  {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
    port = local_port_of(fd);
    ::close(fd);
  }
  auto f = Bootstrap().group(group).connect_async<ByteBuf, ByteBuf>("127.0.0.1", port);
  REQUIRE(f.wait_for(kWait));
  REQUIRE_FALSE(f.is_success());
  try {
    std::rethrow_exception(f.cause());
  } catch (const IoError& e) {
    CHECK(e.code() == std::errc::connection_refused);
  } catch (...) {
    FAIL("expected an IoError");
  }
}

TEST_CASE("the accept buffer stops accepting at its high mark and resumes after accept()") {
  EventLoopGroup parent(1);
  EventLoopGroup children(2);
  ServerBootstrap bootstrap;
  bootstrap.group(parent, children);
  BytesServer server = bind_bytes(bootstrap, {.low_watermark = 1, .high_watermark = 3});
  constexpr int kClients = 7;
  std::vector<std::unique_ptr<RawClient>> clients;
  std::vector<std::uint16_t> client_ports;
  // The kernel completes the handshakes (the backlog holds the connections not accepted).
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<RawClient>(server.local_address()->port()));
    client_ports.push_back(local_port_of(clients.back()->fd()));
  }
  REQUIRE(eventually([&] { return server.buffered() == 3; }));
  CHECK(server.accepting_paused());
  std::this_thread::sleep_for(200ms);  // nobody accepts: the server stays at the mark
  CHECK(server.buffered() == 3);
  CHECK(server.accepting_paused());

  // Taking all three resumes accepting; the other clients come in, three at most at a time.
  std::size_t most_buffered = 0;
  auto accept_n = [](BytesServer& s, int n, std::size_t& most) -> Task<std::vector<std::uint16_t>> {
    std::vector<std::uint16_t> ports;
    for (int i = 0; i < n; ++i) {
      auto child = co_await s.accept();
      if (!child) break;
      most = std::max(most, s.buffered() + 1);
      ports.push_back(child->channel().remote_address()->port());
    }
    co_return ports;
  };
  auto ports = server.event_loop().spawn(accept_n(server, kClients, most_buffered));
  REQUIRE(ports.wait_for(kWait));
  CHECK(ports.get() == client_ports);
  CHECK(most_buffered <= 3);
  CHECK_FALSE(server.accepting_paused());
}

TEST_CASE("docs/coroutines.md: the echo server and a client of 'Servers and clients'") {
  // --- docs/coroutines.md: "Servers and clients" -------------------------------------------
  EventLoopGroup group(2);
  auto server = ServerBootstrap().group(group).bind_async<ByteBuf, ByteBuf>("127.0.0.1", 0).get();
  Future<void> accepting = server.event_loop().spawn(accept_loop(server));

  const std::uint16_t port = server.local_address()->port();
  auto client = Bootstrap().group(group).connect_async<ByteBuf, ByteBuf>("127.0.0.1", port).get();
  EventExecutor& loop = client.event_loop();
  std::string reply = loop.spawn(ask(std::move(client), "ping")).get();  // "ping"

  server.close().get();
  accepting.get();  // accept() yielded nullopt: the loop ended
  // --- end of docs/coroutines.md -------------------------------------------------------------
  CHECK(reply == "ping");
}

TEST_CASE("dropping the AsyncServerChannel closes the children nobody took") {
  EventLoopGroup parent(1);
  EventLoopGroup children(2);
  std::vector<std::unique_ptr<RawClient>> clients;
  {
    ServerBootstrap bootstrap;
    bootstrap.group(parent, children);
    BytesServer server = bind_bytes(bootstrap, {.low_watermark = 1, .high_watermark = 3});
    for (int i = 0; i < 5; ++i) {
      clients.push_back(std::make_unique<RawClient>(server.local_address()->port()));
    }
    REQUIRE(eventually([&] { return server.buffered() == 3; }));
  }
  // The three children that were ready are closed: their clients read the end of stream.
  for (int i = 0; i < 3; ++i) {
    char c = 0;
    CHECK(clients[i]->recv_one(&c) == 0);
  }
}
