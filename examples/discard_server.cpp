// discard_server: reads everything a client sends and throws it away (RFC 863, Netty's
// DiscardServer). It counts the bytes; with --report it prints the throughput every second.
//
//   discard_server [--host H] [--port P] [--threads N] [--report]
//                  (default 127.0.0.1:8009, 1 thread; port 0 picks a free one)
//
// SIGINT/SIGTERM stop it; it then prints how many bytes it discarded in all.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include <trellis/transport.hpp>

#include "example_main.hpp"

using namespace trellis;

// Drops every buffer it reads after adding its size to a counter shared by all connections.
class DiscardHandler final : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
  void channel_read(ChannelHandlerContext&, Message msg) override {
    if (const auto* buf = msg.try_get<ByteBuf>()) {
      bytes_.fetch_add(buf->readable_bytes(), std::memory_order_relaxed);
    }
  }  // msg, and the buffer in it, is released here
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr) override { ctx.close(); }

  std::uint64_t bytes() const noexcept { return bytes_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> bytes_{0};
};

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8009;
  std::size_t threads = 1;
  bool report = false;
  if (!examples::read_flags(
          argc, argv,
          {{"--host", &host}, {"--port", &port}, {"--threads", &threads}, {"--report", &report}},
          "discard_server [--host H] [--port P] [--threads N] [--report]")) {
    return 2;
  }

  examples::StopSignals stop;  // before the loops: their threads inherit the blocked signals
  EventLoopGroup group(std::max<std::size_t>(1, threads));
  auto handler = std::make_shared<DiscardHandler>();
  auto bound = ServerBootstrap()
                   .group(group)
                   .channel<ServerSocketChannel>()
                   .option(channel_option::so_reuseaddr, true)
                   .child_handler(handler)
                   .bind(host, port);
  std::shared_ptr<Channel> server = examples::bind_or_report(bound, "discard_server");
  if (!server) return 1;
  std::cout << "discard_server listening on " << server->local_address()->to_string() << std::endl;

  // Once a second, on the server channel's loop: the bytes of the last second and in all.
  std::optional<ScheduledFuture<void>> reporter;
  if (report) {
    reporter = server->event_loop().schedule_at_fixed_rate(
        std::chrono::seconds(1), std::chrono::seconds(1),
        [handler, last = std::uint64_t{0}]() mutable {
          const std::uint64_t total = handler->bytes();
          std::printf("discard_server: %.3f MiB/s, %llu bytes in all\n",
                      static_cast<double>(total - last) / (1024.0 * 1024.0),
                      static_cast<unsigned long long>(total));
          std::fflush(stdout);
          last = total;
        });
  }

  // Ctrl-C or SIGTERM: close the listening channel and return.
  stop.wait();
  if (reporter) reporter->cancel();
  server->close();
  server->close_future().wait();
  std::cout << "discard_server: discarded " << handler->bytes() << " bytes" << std::endl;
  return 0;
}
