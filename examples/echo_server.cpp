// echo_server: the smallest trellis server. Every byte a client sends comes straight back.
//
//   echo_server [--host H] [--port P] [--threads N]      (default 127.0.0.1:8007, 1 thread)
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>

#include <trellis/transport.hpp>

using namespace trellis;

// Writes back each buffer it reads, and flushes once per batch of reads.
class EchoHandler final : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
  void channel_read(ChannelHandlerContext& ctx, Message msg) override { ctx.write(std::move(msg)); }
  void channel_read_complete(ChannelHandlerContext& ctx) override { ctx.flush(); }
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr) override { ctx.close(); }
};

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
      std::cerr << "usage: echo_server [--host H] [--port P] [--threads N]\n";
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
                   .child_handler(std::make_shared<EchoHandler>())
                   .bind(host, static_cast<std::uint16_t>(port));
  bound.wait();
  if (!bound.is_success()) {
    try {
      std::rethrow_exception(bound.cause());
    } catch (const std::exception& e) {
      std::cerr << "echo_server: " << e.what() << "\n";
    }
    return 1;
  }
  std::shared_ptr<Channel> server = bound.get();
  std::cout << "echo_server listening on " << server->local_address()->to_string() << std::endl;

  // Ctrl-C or SIGTERM: close the listening channel and return.
  int received = 0;
  sigwait(&signals, &received);
  server->close();
  server->close_future().wait();
  return 0;
}
