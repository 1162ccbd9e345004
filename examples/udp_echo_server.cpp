// udp_echo_server: every datagram a client sends comes straight back to it.
//
//   udp_echo_server [--host H] [--port P] [--threads N]   (default 127.0.0.1:8007, 1 thread;
//                                                         port 0 picks a free one)
//
// A UDP server is one channel: --threads N binds N channels to the same port with SO_REUSEPORT,
// one per loop, and the kernel spreads the clients over them.
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <trellis/transport.hpp>

using namespace trellis;

// Sends each datagram back to its sender, and flushes once per batch of reads.
class UdpEchoHandler final : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    auto packet = msg.take<DatagramPacket>();
    ctx.write(Message(packet.reply(std::move(packet.content))));
  }
  void channel_read_complete(ChannelHandlerContext& ctx) override { ctx.flush(); }
  // A datagram that could not be sent (or an ICMP error) concerns one client: keep serving.
  void exception_caught(ChannelHandlerContext&, std::exception_ptr) override {}
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
      std::cerr << "usage: udp_echo_server [--host H] [--port P] [--threads N]\n";
      return 2;
    }
  }
  if (threads < 1) threads = 1;

  // Blocked before the loop threads start (they inherit the mask), so sigwait below gets them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  EventLoopGroup group(static_cast<std::size_t>(threads));
  Bootstrap bootstrap;
  bootstrap.group(group)
      .channel<DatagramChannel>()
      .option(channel_option::so_reuseport, threads > 1)
      .handler(std::make_shared<UdpEchoHandler>());
  std::vector<std::shared_ptr<Channel>> channels;
  for (int i = 0; i < threads; ++i) {
    // The first channel picks the port (when 0); the others share it.
    auto bound = bootstrap.bind(host, channels.empty() ? static_cast<std::uint16_t>(port)
                                                       : channels[0]->local_address()->port());
    bound.wait();
    if (!bound.is_success()) {
      try {
        std::rethrow_exception(bound.cause());
      } catch (const std::exception& e) {
        std::cerr << "udp_echo_server: " << e.what() << "\n";
      }
      return 1;
    }
    channels.push_back(bound.get());
  }
  std::cout << "udp_echo_server listening on " << channels[0]->local_address()->to_string()
            << std::endl;

  // Ctrl-C or SIGTERM: close the channels and return.
  int received = 0;
  sigwait(&signals, &received);
  for (auto& ch : channels) ch->close();
  for (auto& ch : channels) ch->close_future().wait();
  return 0;
}
