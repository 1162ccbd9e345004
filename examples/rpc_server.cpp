// rpc_server: a request/response server over length-prefixed frames (rpc_protocol.hpp). Each
// request is a list of numbers; the reply is their sum. The work is a blocking call (here a
// sleep of --work-ms stands for a slow disk or a legacy library): each connection is served by
// a coroutine that runs it with co_await trellis::blocking(...), on a blocker thread, so the
// event loop goes on serving the other connections meanwhile.
//
//   rpc_server [--host H] [--port P] [--threads N] [--work-ms MS]
//              (default 127.0.0.1:8090, 1 thread, 5 ms of work per request; port 0 picks one)
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <numeric>
#include <string>
#include <thread>

#include <trellis/transport.hpp>

#include "rpc_protocol.hpp"

using namespace trellis;

using RpcChannel = AsyncChannel<ByteBuf, ByteBuf>;

// The blocking work of one request.
std::int64_t slow_sum(const std::vector<std::int64_t>& numbers, std::chrono::milliseconds work) {
  std::this_thread::sleep_for(work);
  return std::accumulate(numbers.begin(), numbers.end(), std::int64_t{0});
}

// One connection, on its own loop: a reply per request, in order; closes at the end.
Task<void> serve(RpcChannel channel, std::chrono::milliseconds work) {
  try {
    while (auto frame = co_await channel.inbound().next()) {
      rpc::Request request = rpc::decode_request(*frame);
      auto sum_up = [&request, work] { return slow_sum(request.numbers, work); };
      const std::int64_t sum = co_await blocking(sum_up);
      co_await channel.outbound().write(rpc::encode(rpc::Reply{request.id, sum}));
    }
  } catch (const std::exception&) {
    // A malformed frame, a reset or a failed write ends this connection only.
  }
  co_await channel.close();
}

// On the server channel's loop: hands each accepted connection to a task on the child's loop.
Task<void> accept_loop(AsyncServerChannel<ByteBuf, ByteBuf>& server,
                       std::chrono::milliseconds work) {
  while (auto child = co_await server.accept()) {
    EventExecutor& loop = child->event_loop();
    loop.spawn(serve(std::move(*child), work));
  }
}

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  int port = 8090;
  int threads = 1;
  int work_ms = 5;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--host" && i + 1 < argc) {
      host = argv[i + 1];
    } else if (flag == "--port" && i + 1 < argc) {
      port = std::atoi(argv[i + 1]);
    } else if (flag == "--threads" && i + 1 < argc) {
      threads = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--work-ms" && i + 1 < argc) {
      work_ms = std::max(0, std::atoi(argv[i + 1]));
    } else {
      std::cerr << "usage: rpc_server [--host H] [--port P] [--threads N] [--work-ms MS]\n";
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
                   .option(channel_option::so_reuseaddr, true)
                   .child_handler(ChannelInitializer::from(rpc::add_frame_codec))
                   .bind_async<ByteBuf, ByteBuf>(host, static_cast<std::uint16_t>(port));
  bound.wait();
  if (!bound.is_success()) {
    try {
      std::rethrow_exception(bound.cause());
    } catch (const std::exception& e) {
      std::cerr << "rpc_server: " << e.what() << "\n";
    }
    return 1;
  }
  AsyncServerChannel<ByteBuf, ByteBuf> server = std::move(bound).get();
  std::cout << "rpc_server listening on " << server.local_address()->to_string() << std::endl;
  Future<void> accepting =
      server.event_loop().spawn(accept_loop(server, std::chrono::milliseconds(work_ms)));

  // Ctrl-C or SIGTERM: close the listening channel; the accept loop ends.
  int received = 0;
  sigwait(&signals, &received);
  server.close().wait();
  accepting.wait();
  return 0;
}
