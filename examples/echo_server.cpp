// echo_server: the smallest trellis server. Every byte a client sends comes straight back.
//
//   echo_server [--host H] [--port P] [--threads N]      (default 127.0.0.1:8007, 1 thread)
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>

#include <trellis/transport.hpp>

#include "example_main.hpp"

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
  std::uint16_t port = 8007;
  std::size_t threads = 1;
  if (!examples::read_flags(argc, argv,
                            {{"--host", &host}, {"--port", &port}, {"--threads", &threads}},
                            "echo_server [--host H] [--port P] [--threads N]")) {
    return 2;
  }

  examples::StopSignals stop;  // before the loops: their threads inherit the blocked signals
  EventLoopGroup group(threads);
  auto bound = ServerBootstrap()
                   .group(group)
                   .channel<ServerSocketChannel>()
                   .option(channel_option::so_reuseaddr, true)
                   .child_handler(std::make_shared<EchoHandler>())
                   .bind(host, port);
  std::shared_ptr<Channel> server = examples::bind_or_report(bound, "echo_server");
  if (!server) return 1;
  std::cout << "echo_server listening on " << server->local_address()->to_string() << std::endl;

  // Ctrl-C or SIGTERM: close the listening channel and return.
  stop.wait();
  server->close();
  server->close_future().wait();
  return 0;
}
