// hexdump_proxy: Netty's HexDumpProxy. For each accepted connection it connects to the remote
// host:port on the same event loop and relays the bytes both ways; a LoggingHandler on the
// accepted side logs a hex dump of what passes (READ: from the client, WRITE: to the client).
//
//   hexdump_proxy [--host H] [--port P] [--remote-host H] [--remote-port P]
//                 (default 127.0.0.1:8081 to 127.0.0.1:8080; port 0 picks a free one)
//
// The accepted side reads nothing (auto_read off) until the remote is connected. While one side
// is unwritable the other stops reading. When one side closes, the other closes once flushed.
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include <trellis/transport.hpp>

#include "example_main.hpp"

using namespace trellis;

// Closes ch once what was written to it before has been flushed (Netty's closeOnFlush).
void close_on_flush(const std::shared_ptr<Channel>& ch) {
  ChannelPromise flushed = ch->new_promise();
  ch->write_and_flush(Message(ByteBuf()), flushed);
  flushed.future().add_listener([ch](const Future<void>&) { ch->close(); });
}

// Writes what its channel reads to the peer channel. Both channels live on one loop, so the
// handlers of a pair never run at the same time.
class RelayHandler : public ChannelInboundHandler {
 public:
  explicit RelayHandler(std::shared_ptr<Channel> peer = nullptr) : peer_(std::move(peer)) {}

  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    peer_->write_and_flush(std::move(msg));
    // Back-pressure: stop reading while the peer has more queued than it should.
    if (!peer_->is_writable()) ctx.channel().config().set_auto_read(false);
  }
  // This side drained below its low water mark (or filled up): the peer reads again (or stops).
  void channel_writability_changed(ChannelHandlerContext& ctx) override {
    if (peer_) peer_->config().set_auto_read(ctx.channel().is_writable());
    ctx.fire_channel_writability_changed();
  }
  void channel_inactive(ChannelHandlerContext& ctx) override {
    if (peer_) close_on_flush(peer_);
    ctx.fire_channel_inactive();
  }
  void exception_caught(ChannelHandlerContext& ctx, std::exception_ptr) override { ctx.close(); }

 protected:
  std::shared_ptr<Channel> peer_;
};

// The accepted side: connects to the remote when active and starts reading once connected.
class FrontendHandler final : public RelayHandler,
                              public std::enable_shared_from_this<FrontendHandler> {
 public:
  FrontendHandler(std::string host, std::uint16_t port) : host_(std::move(host)), port_(port) {}

  void channel_active(ChannelHandlerContext& ctx) override {
    std::shared_ptr<Channel> inbound = ctx.channel().shared_from_this();
    auto connected = Bootstrap()
                         .group(dynamic_cast<EventLoop&>(inbound->event_loop()))
                         .handler(std::make_shared<RelayHandler>(inbound))
                         .connect(host_, port_);
    // Runs on the loop, like the handlers.
    connected.add_listener([self = shared_from_this(), inbound](const auto& f) {
      if (!f.is_success()) {
        spdlog::warn("hexdump_proxy: cannot connect to {}:{}", self->host_, self->port_);
        inbound->close();
      } else if (!inbound->is_active()) {  // the client left meanwhile
        f.get()->close();
      } else {
        self->peer_ = f.get();
        inbound->config().set_auto_read(true);
      }
    });
    ctx.fire_channel_active();
  }

 private:
  std::string host_;
  std::uint16_t port_;
};

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8081;
  std::string remote_host = "127.0.0.1";
  std::uint16_t remote_port = 8080;
  if (!examples::read_flags(argc, argv,
                            {{"--host", &host},
                             {"--port", &port},
                             {"--remote-host", &remote_host},
                             {"--remote-port", &remote_port}},
                            "hexdump_proxy [--host H] [--port P] [--remote-host H] "
                            "[--remote-port P]")) {
    return 2;
  }

  examples::StopSignals stop;  // before the loops: their threads inherit the blocked signals
  EventLoopGroup group(1);
  auto logger = std::make_shared<LoggingHandler>(spdlog::level::info);
  auto bound =
      ServerBootstrap()
          .group(group)
          .option(channel_option::so_reuseaddr, true)
          .child_option(channel_option::auto_read, false)
          .child_handler(ChannelInitializer::from([=](Channel& ch) {
            ch.pipeline()
                .add_last("logger", logger)
                .add_last("frontend", std::make_shared<FrontendHandler>(remote_host, remote_port));
          }))
          .bind(host, port);
  std::shared_ptr<Channel> server = examples::bind_or_report(bound, "hexdump_proxy");
  if (!server) return 1;
  std::cout << "hexdump_proxy listening on " << server->local_address()->to_string()
            << ", relaying to " << remote_host << ":" << remote_port << std::endl;

  // Ctrl-C or SIGTERM: close the listening channel and return.
  stop.wait();
  server->close();
  server->close_future().wait();
  return 0;
}
