// async_echo_server: echo_server written as coroutines. An accept loop on the server channel's
// loop takes each connection as an AsyncChannel and serves it from a task on the child's loop.
//
//   async_echo_server [--host H] [--port P] [--threads N]      (default 127.0.0.1:8007, 1 thread)
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>

#include <trellis/transport.hpp>

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
  int port = 8007;
  int threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--host") {
      host = argv[i + 1];
    } else if (flag == "--port") {
      port = std::atoi(argv[i + 1]);
    } else if (flag == "--threads") {
      threads = std::atoi(argv[i + 1]);
    } else {
      std::cerr << "usage: async_echo_server [--host H] [--port P] [--threads N]\n";
      return 2;
    }
  }

  // Blocked before the loop threads start (they inherit the mask), so sigwait below gets them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  EventLoopGroup group(static_cast<std::size_t>(threads));
  auto bound = ServerBootstrap()
                   .group(group)
                   .channel<ServerSocketChannel>()
                   .option(channel_option::so_reuseaddr, true)
                   .bind_async<ByteBuf, ByteBuf>(host, static_cast<std::uint16_t>(port));
  bound.wait();
  if (!bound.is_success()) {
    try {
      std::rethrow_exception(bound.cause());
    } catch (const std::exception& e) {
      std::cerr << "async_echo_server: " << e.what() << "\n";
    }
    return 1;
  }
  AsyncServerChannel<ByteBuf, ByteBuf> server = std::move(bound).get();
  std::cout << "async_echo_server listening on " << server.local_address()->to_string()
            << std::endl;
  Future<void> accepting = server.event_loop().spawn(accept_loop(server));

  // Ctrl-C or SIGTERM: close the listening channel; the accept loop ends.
  int received = 0;
  sigwait(&signals, &received);
  server.close().wait();
  accepting.wait();
  return 0;
}
