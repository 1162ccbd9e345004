// udp_echo_server: every datagram a client sends comes straight back to it.
//
//   udp_echo_server [--host H] [--port P] [--threads N]   (default 127.0.0.1:8007, 1 thread;
//                                                         port 0 picks a free one)
//
// A UDP server is one channel: --threads N binds N channels to the same port with SO_REUSEPORT,
// one per loop, and the kernel spreads the clients over them.
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <trellis/transport.hpp>

#include "example_main.hpp"

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
  std::uint16_t port = 8007;
  int threads = 1;
  if (!examples::read_flags(argc, argv,
                            {{"--host", &host}, {"--port", &port}, {"--threads", &threads}},
                            "udp_echo_server [--host H] [--port P] [--threads N]")) {
    return 2;
  }
  if (threads < 1) threads = 1;

  examples::StopSignals stop;  // before the loops: their threads inherit the blocked signals
  EventLoopGroup group(static_cast<std::size_t>(threads));
  Bootstrap bootstrap;
  bootstrap.group(group)
      .channel<DatagramChannel>()
      .option(channel_option::so_reuseport, threads > 1)
      .handler(std::make_shared<UdpEchoHandler>());
  std::vector<std::shared_ptr<Channel>> channels;
  for (int i = 0; i < threads; ++i) {
    // The first channel picks the port (when 0); the others share it.
    auto bound =
        bootstrap.bind(host, channels.empty() ? port : channels[0]->local_address()->port());
    std::shared_ptr<Channel> channel = examples::bind_or_report(bound, "udp_echo_server");
    if (!channel) return 1;
    channels.push_back(channel);
  }
  std::cout << "udp_echo_server listening on " << channels[0]->local_address()->to_string()
            << std::endl;

  // Ctrl-C or SIGTERM: close the channels and return.
  stop.wait();
  for (auto& ch : channels) ch->close();
  for (auto& ch : channels) ch->close_future().wait();
  return 0;
}
