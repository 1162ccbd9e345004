// chat_server: a line-based chat. Every line a client sends goes to every other client as
// "[127.0.0.1:50312] the line"; clients hear who joins and who leaves, and a client silent for
// --idle-seconds gets a goodbye line and is disconnected (0: never). See docs/tutorial.md.
//
//   chat_server [--host H] [--port P] [--threads N] [--idle-seconds S]
//               (default 127.0.0.1:8023, 1 thread, 300 s)
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include <trellis/transport.hpp>

#include "chat_handler.hpp"
#include "chat_initializer.hpp"

using namespace trellis;
using examples::ChatHandler;
using examples::ChatInitializer;

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  int port = 8023;
  int threads = 1;
  int idle_seconds = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--host") {
      host = argv[i + 1];
    } else if (flag == "--port") {
      port = std::atoi(argv[i + 1]);
    } else if (flag == "--threads") {
      threads = std::atoi(argv[i + 1]);
    } else if (flag == "--idle-seconds") {
      idle_seconds = std::atoi(argv[i + 1]);
    } else {
      std::cerr << "usage: chat_server [--host H] [--port P] [--threads N] [--idle-seconds S]\n";
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
  auto chat = std::make_shared<ChatHandler>();
  auto init = std::make_shared<ChatInitializer>(std::chrono::seconds(idle_seconds), chat);
  auto bound = ServerBootstrap()
                   .group(group)
                   .channel<ServerSocketChannel>()
                   .option(channel_option::so_reuseaddr, true)
                   .child_handler(init)
                   .bind(host, static_cast<std::uint16_t>(port));
  bound.wait();
  if (!bound.is_success()) {
    try {
      std::rethrow_exception(bound.cause());
    } catch (const std::exception& e) {
      std::cerr << "chat_server: " << e.what() << "\n";
    }
    return 1;
  }
  std::shared_ptr<Channel> server = bound.get();
  std::cout << "chat_server listening on " << server->local_address()->to_string() << std::endl;

  // Ctrl-C or SIGTERM: stop accepting, then close every client.
  int received = 0;
  sigwait(&signals, &received);
  server->close();
  server->close_future().wait();
  chat->close_all().wait();
  return 0;
}
