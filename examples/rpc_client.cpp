// rpc_client: sends COUNT "sum" requests to rpc_server (rpc_protocol.hpp), BATCH at a time
// before it reads their replies, and checks each reply's id and sum. A coroutine on the
// connection's loop does it all through an AsyncChannel (connect_async). Exits 1 on a wrong
// reply or an error.
//
//   rpc_client [--host H] [--port P] [--count N] [--batch B] [--numbers K]
//              (default 127.0.0.1:8090, 100 requests, 8 at a time, 16 numbers each)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <numeric>
#include <string>

#include <trellis/transport.hpp>

#include "example_main.hpp"
#include "rpc_protocol.hpp"

using namespace trellis;

using RpcChannel = AsyncChannel<ByteBuf, ByteBuf>;

// The numbers of request `id`: some negative, different for every request.
rpc::Request make_request(std::uint32_t id, long numbers) {
  rpc::Request request{id, {}};
  for (long j = 0; j < numbers; ++j)
    request.numbers.push_back(static_cast<std::int64_t>(id) * 1000 + j - 500);
  return request;
}

// Connects, sends the requests batch by batch and checks every reply, on `loop` (where the
// connection lives). Returns the error's text, empty on success: no exception leaves the loop.
Task<std::string> run(EventLoop& loop, std::string host, std::uint16_t port, long count, long batch,
                      long numbers) {
  try {
    auto connecting = Bootstrap()
                          .group(loop)
                          .handler(ChannelInitializer::from(rpc::add_frame_codec))
                          .connect_async<ByteBuf, ByteBuf>(host, port);
    RpcChannel channel = co_await std::move(connecting);
    for (long first = 0; first < count; first += batch) {
      const long last = std::min(count, first + batch);
      for (long id = first; id < last; ++id) {
        co_await channel.outbound().write(
            rpc::encode(make_request(static_cast<std::uint32_t>(id), numbers)));
      }
      for (long id = first; id < last; ++id) {
        auto frame = co_await channel.inbound().next();
        if (!frame) throw Error("the server closed the connection");
        const rpc::Reply reply = rpc::decode_reply(*frame);
        const auto sent = make_request(static_cast<std::uint32_t>(id), numbers).numbers;
        const std::int64_t expected = std::accumulate(sent.begin(), sent.end(), std::int64_t{0});
        if (reply.id != id || reply.sum != expected) {
          throw Error("request " + std::to_string(id) + ": got reply " + std::to_string(reply.id) +
                      " = " + std::to_string(reply.sum) + ", expected " + std::to_string(expected));
        }
      }
    }
    co_await channel.close();
  } catch (const std::exception& e) {
    co_return std::string(e.what());
  }
  co_return std::string();
}

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8090;
  long count = 100;
  long batch = 8;
  long numbers = 16;
  if (!examples::read_flags(
          argc, argv,
          {{"--host", &host},
           {"--port", &port},
           {"--count", &count},
           {"--batch", &batch},
           {"--numbers", &numbers}},
          "rpc_client [--host H] [--port P] [--count N] [--batch B] [--numbers K]")) {
    return 2;
  }
  if (count == 0 || batch == 0 || numbers > 100'000) {
    std::cerr << "rpc_client: --count and --batch must be positive, --numbers 0 to 100000\n";
    return 2;
  }

  EventLoopGroup group(1);
  EventLoop& loop = group.next();
  const auto start = std::chrono::steady_clock::now();
  const std::string error = loop.spawn(run(loop, host, port, count, batch, numbers)).get();
  if (!error.empty()) {
    std::cerr << "rpc_client: " << error << "\n";
    return 1;
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::cout << "rpc_client: " << count << " requests answered and verified in " << took.count()
            << " s\n";
  return 0;
}
