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
#include <cstdint>
#include <iostream>
#include <numeric>
#include <optional>
#include <string>
#include <thread>

#include <trellis/transport.hpp>

#include "example_main.hpp"
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
  std::uint16_t port = 8090;
  std::size_t threads = 1;
  int work_ms = 5;
  if (!examples::read_flags(
          argc, argv,
          {{"--host", &host}, {"--port", &port}, {"--threads", &threads}, {"--work-ms", &work_ms}},
          "rpc_server [--host H] [--port P] [--threads N] [--work-ms MS]")) {
    return 2;
  }

  examples::StopSignals stop;  // before the loops: their threads inherit the blocked signals
  EventLoopGroup group(std::max<std::size_t>(1, threads));
  auto bound = ServerBootstrap()
                   .group(group)
                   .option(channel_option::so_reuseaddr, true)
                   .child_handler(ChannelInitializer::from(rpc::add_frame_codec))
                   .bind_async<ByteBuf, ByteBuf>(host, port);
  std::optional<AsyncServerChannel<ByteBuf, ByteBuf>> server =
      examples::bind_or_report(std::move(bound), "rpc_server");
  if (!server) return 1;
  std::cout << "rpc_server listening on " << server->local_address()->to_string() << std::endl;
  Future<void> accepting =
      server->event_loop().spawn(accept_loop(*server, std::chrono::milliseconds(work_ms)));

  // Ctrl-C or SIGTERM: close the listening channel; the accept loop ends.
  stop.wait();
  server->close().wait();
  accepting.wait();
  return 0;
}
