// echo_client: sends COUNT messages of SIZE bytes to an echo server, one at a time, and checks
// every byte that comes back. Exits non-zero on a mismatch or an error.
//
//   echo_client [--host H] [--port P] [--size BYTES] [--count N]
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>

#include <trellis/transport.hpp>

#include "example_main.hpp"

using namespace trellis;

// Sends one message, waits for all of its bytes to come back, compares, sends the next.
class PingPongHandler final : public ChannelInboundHandler {
 public:
  PingPongHandler(std::size_t size, long count) : size_(size), count_(count) {
    for (std::size_t i = 0; i < size_; ++i) payload_.push_back(static_cast<char>('a' + i % 26));
  }

  void channel_active(ChannelHandlerContext& ctx) override { send(ctx); }

  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    auto span = msg.get<ByteBuf>().readable_span();
    for (std::byte b : span) {
      if (static_cast<char>(b) != payload_[received_ % size_]) {
        done_.try_set_exception(
            std::make_exception_ptr(Error("mismatch at byte " + std::to_string(received_) +
                                          " of message " + std::to_string(sent_))));
        ctx.close();
        return;
      }
      ++received_;
    }
    if (received_ == size_) {
      received_ = 0;
      if (sent_ == count_) {
        done_.try_set_value();
        ctx.close();
      } else {
        send(ctx);
      }
    }
  }

  void channel_inactive(ChannelHandlerContext& ctx) override {
    done_.try_set_exception(std::make_exception_ptr(Error("connection closed early")));
    ctx.fire_channel_inactive();
  }
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr error) override {
    done_.try_set_exception(error);
    ctx.close();
  }

  Future<void> done() const { return done_.future(); }

 private:
  void send(ChannelHandlerContext& ctx) {
    ++sent_;
    ctx.write_and_flush(Message(ByteBuf::from(std::string_view(payload_))));
  }

  std::size_t size_;
  long count_;
  std::string payload_;
  std::size_t received_ = 0;
  long sent_ = 0;
  Promise<void> done_;
};

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8007;
  long size = 64;
  long count = 1000;
  if (!examples::read_flags(
          argc, argv,
          {{"--host", &host}, {"--port", &port}, {"--size", &size}, {"--count", &count}},
          "echo_client [--host H] [--port P] [--size BYTES] [--count N]")) {
    return 2;
  }
  if (size == 0 || count == 0) {
    std::cerr << "echo_client: --size and --count must be positive\n";
    return 2;
  }

  EventLoopGroup group(1);
  auto handler = std::make_shared<PingPongHandler>(static_cast<std::size_t>(size), count);
  const auto start = std::chrono::steady_clock::now();
  auto connected = Bootstrap().group(group).handler(handler).connect(host, port);
  try {
    connected.get();
    handler->done().get();
  } catch (const std::exception& e) {
    std::cerr << "echo_client: " << e.what() << "\n";
    return 1;
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::cout << count << " messages of " << size << " bytes echoed and verified in " << took.count()
            << " s (" << static_cast<double>(count) / took.count() << " round trips/s)\n";
  return 0;
}
