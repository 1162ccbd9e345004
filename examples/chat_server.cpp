// chat_server: a line-based chat. Every line a client sends goes to every other client as
// "[127.0.0.1:50312] the line"; clients hear who joins and who leaves, and a client silent for
// --idle-seconds gets a goodbye line and is disconnected (0: never). See docs/tutorial.md.
//
//   chat_server [--host H] [--port P] [--threads N] [--idle-seconds S]
//               (default 127.0.0.1:8023, 1 thread, 300 s)
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>

#include <trellis/transport.hpp>

#include "chat_handler.hpp"
#include "chat_initializer.hpp"
#include "example_main.hpp"

using namespace trellis;
using examples::ChatHandler;
using examples::ChatInitializer;

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8023;
  std::size_t threads = 1;
  int idle_seconds = 300;
  if (!examples::read_flags(argc, argv,
                            {{"--host", &host},
                             {"--port", &port},
                             {"--threads", &threads},
                             {"--idle-seconds", &idle_seconds}},
                            "chat_server [--host H] [--port P] [--threads N] [--idle-seconds S]")) {
    return 2;
  }

  examples::StopSignals stop;  // before the loops: their threads inherit the blocked signals
  EventLoopGroup group(threads);
  auto chat = std::make_shared<ChatHandler>();
  auto init = std::make_shared<ChatInitializer>(std::chrono::seconds(idle_seconds), chat);
  auto bound = ServerBootstrap()
                   .group(group)
                   .channel<ServerSocketChannel>()
                   .option(channel_option::so_reuseaddr, true)
                   .child_handler(init)
                   .bind(host, port);
  std::shared_ptr<Channel> server = examples::bind_or_report(bound, "chat_server");
  if (!server) return 1;
  std::cout << "chat_server listening on " << server->local_address()->to_string() << std::endl;

  // Ctrl-C or SIGTERM: stop accepting, then close every client.
  stop.wait();
  server->close();
  server->close_future().wait();
  chat->close_all().wait();
  return 0;
}
