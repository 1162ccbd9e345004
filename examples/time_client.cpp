// time_client: Netty's TIME protocol client. It connects, waits for the server's 4 bytes,
// prints the time they carry and exits. TimeDecoder, a ByteToMessageDecoder, waits until all 4
// bytes have arrived (TCP may deliver them in pieces) and turns them into a UnixTime.
//
//   time_client [--host H] [--port P]                    (default 127.0.0.1:8037)
//
// Prints "time_client: 2026-12-05 11:52:00 UTC (unix 1796471520)"; exits 1 when the server
// closes before sending the time, or on a connection error.
#include <cstdint>
#include <iostream>
#include <string>

#include <trellis/codec.hpp>
#include <trellis/transport.hpp>

#include "example_main.hpp"
#include "unix_time.hpp"

using namespace trellis;

// Emits one UnixTime per 4 bytes; fewer than 4 bytes wait in the cumulation for the rest.
class TimeDecoder final : public codec::ByteToMessageDecoder {
 protected:
  void decode(ChannelHandlerContext&, ByteBuf& in, Out& out) override {
    if (in.readable_bytes() < 4) return;
    out.emplace_back(UnixTime::from_rfc868(in.read_u32()));
  }
};

// Takes the first UnixTime, completes time() with it and closes the connection.
class TimeClientHandler final : public ChannelInboundHandler {
 public:
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    time_.try_set_value(msg.take<UnixTime>());
    ctx.close();
  }
  void channel_inactive(ChannelHandlerContext& ctx) override {
    time_.try_set_exception(std::make_exception_ptr(Error("closed before the time arrived")));
    ctx.fire_channel_inactive();
  }
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) override {
    time_.try_set_exception(error);
    ctx.close();
  }

  Future<UnixTime> time() const { return time_.future(); }

 private:
  Promise<UnixTime> time_;
};

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8037;
  if (!examples::read_flags(argc, argv, {{"--host", &host}, {"--port", &port}},
                            "time_client [--host H] [--port P]")) {
    return 2;
  }

  EventLoopGroup group(1);
  auto handler = std::make_shared<TimeClientHandler>();
  try {
    Bootstrap()
        .group(group)
        .handler(ChannelInitializer::from([handler](Channel& ch) {
          ch.pipeline()
              .add_last("decoder", std::make_shared<TimeDecoder>())
              .add_last("handler", handler);
        }))
        .connect(host, port)
        .get();
    const UnixTime time = handler->time().get();
    std::cout << "time_client: " << time.to_string() << " (unix " << time.seconds << ")\n";
  } catch (const std::exception& e) {
    std::cerr << "time_client: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
