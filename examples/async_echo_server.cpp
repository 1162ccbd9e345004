// async_echo_server: echo_server written as coroutines. An accept loop on the server channel's
// loop takes each connection as an AsyncChannel and serves it from a task on the child's loop.
//
//   async_echo_server [--host H] [--port P] [--threads N]      (default 127.0.0.1:8007, 1 thread)
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>

#include <trellis/transport.hpp>

#include "example_main.hpp"

using namespace trellis;

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

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8007;
  std::size_t threads = 1;
  if (!examples::read_flags(argc, argv,
                            {{"--host", &host}, {"--port", &port}, {"--threads", &threads}},
                            "async_echo_server [--host H] [--port P] [--threads N]")) {
    return 2;
  }

  examples::StopSignals stop;  // before the loops: their threads inherit the blocked signals
  EventLoopGroup group(threads);
  auto bound = ServerBootstrap()
                   .group(group)
                   .channel<ServerSocketChannel>()
                   .option(channel_option::so_reuseaddr, true)
                   .bind_async<ByteBuf, ByteBuf>(host, port);
  std::optional<AsyncServerChannel<ByteBuf, ByteBuf>> server =
      examples::bind_or_report(std::move(bound), "async_echo_server");
  if (!server) return 1;
  std::cout << "async_echo_server listening on " << server->local_address()->to_string()
            << std::endl;
  Future<void> accepting = server->event_loop().spawn(accept_loop(*server));

  // Ctrl-C or SIGTERM: close the listening channel; the accept loop ends.
  stop.wait();
  server->close().wait();
  accepting.wait();
  return 0;
}
