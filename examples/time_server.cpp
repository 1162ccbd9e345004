// time_server: Netty's TIME protocol server (RFC 868 style). To each client it writes the current
// time as 4 big-endian bytes and closes the connection. The handler writes a UnixTime message;
// TimeEncoder, a MessageToByteEncoder<UnixTime>, turns it into the bytes.
//
//   time_server [--host H] [--port P] [--threads N]      (default 127.0.0.1:8037, 1 thread;
//                                                        port 0 picks a free one)
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>

#include <trellis/codec.hpp>
#include <trellis/transport.hpp>

#include "example_main.hpp"
#include "unix_time.hpp"

using namespace trellis;

// Encodes a UnixTime as the RFC 868 value: seconds since 1900, 4 bytes, big-endian.
class TimeEncoder final : public codec::MessageToByteEncoder<UnixTime> {
 public:
  bool is_sharable() const noexcept override { return true; }

 protected:
  void encode(ChannelHandlerContext&, UnixTime msg, ByteBuf& out) override {
    out.write_u32(msg.to_rfc868());
  }
};

// Writes the time as soon as the connection is up, then closes once the write completed.
class TimeServerHandler final : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
  void channel_active(ChannelHandlerContext& ctx) override {
    ChannelPromise written = ctx.new_promise();
    ctx.write_and_flush(Message(UnixTime::now()), written);
    written.future().add_listener(
        [channel = ctx.channel().shared_from_this()](const Future<void>&) { channel->close(); });
    ctx.fire_channel_active();
  }
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr) override { ctx.close(); }
};

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8037;
  std::size_t threads = 1;
  if (!examples::read_flags(argc, argv,
                            {{"--host", &host}, {"--port", &port}, {"--threads", &threads}},
                            "time_server [--host H] [--port P] [--threads N]")) {
    return 2;
  }

  examples::StopSignals stop;  // before the loops: their threads inherit the blocked signals
  EventLoopGroup group(std::max<std::size_t>(1, threads));
  auto encoder = std::make_shared<TimeEncoder>();
  auto handler = std::make_shared<TimeServerHandler>();
  auto bound = ServerBootstrap()
                   .group(group)
                   .channel<ServerSocketChannel>()
                   .option(channel_option::so_reuseaddr, true)
                   .child_handler(ChannelInitializer::from([encoder, handler](Channel& ch) {
                     ch.pipeline().add_last("encoder", encoder).add_last("handler", handler);
                   }))
                   .bind(host, port);
  std::shared_ptr<Channel> server = examples::bind_or_report(bound, "time_server");
  if (!server) return 1;
  std::cout << "time_server listening on " << server->local_address()->to_string() << std::endl;

  // Ctrl-C or SIGTERM: close the listening channel and return.
  stop.wait();
  server->close();
  server->close_future().wait();
  return 0;
}
