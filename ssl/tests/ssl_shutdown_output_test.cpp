// SslHandler's half-close: shutdown_output() sends close_notify before the transport's output is
// shut down (also when HttpServerCodec's lingering close asks for it), and reading goes on.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <trellis/http.hpp>
#include <trellis/pipeline/channel_events.hpp>
#include <trellis/ssl/ssl_context_builder.hpp>
#include <trellis/ssl/ssl_error.hpp>
#include <trellis/ssl/ssl_handler.hpp>

#include "test_pki.hpp"
#include "tls_pair.hpp"

using namespace trellis;
using namespace trellis::ssl;
using trellis::ssl::testing::test_pki;
using trellis::ssl::testing::TlsPair;

namespace {

SslContext server_context() {
  return SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key).build();
}

SslContext client_context() {
  return SslContextBuilder::for_client().trust_ca_file(test_pki().ca_cert).build();
}

using Log = std::vector<std::string>;

// Sits between the transport and SslHandler: logs what reaches the transport.
class WireLog final : public ChannelOutboundHandler {
 public:
  explicit WireLog(std::shared_ptr<Log> log) : log_(std::move(log)) {}
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override {
    log_->push_back("write");
    ctx.write(std::move(msg), std::move(promise));
  }
  void shutdown_output(ChannelHandlerContext& ctx, ChannelPromise promise) override {
    log_->push_back("shutdown_output");
    ctx.shutdown_output(std::move(promise));
  }

 private:
  std::shared_ptr<Log> log_;
};

}  // namespace

TEST_CASE("shutdown_output sends close_notify after the data, then shuts the output down") {
  TlsPair pair(client_context(), server_context());
  pair.pump();
  auto log = std::make_shared<Log>();
  pair.client->pipeline().add_first("wire", std::make_shared<WireLog>(log));
  pair.client->write(ByteBuf::from("last words"));
  auto done = pair.client->shutdown_output();
  CHECK(done.is_success());
  CHECK(pair.client->is_output_shutdown());
  // The data and close_notify reached the transport before the output was shut down.
  REQUIRE(log->size() >= 2);
  CHECK(log->back() == "shutdown_output");
  CHECK((*log)[log->size() - 2] == "write");
  // Writes after it fail.
  Promise<void> late;
  pair.client->write_and_flush(ByteBuf::from("too late"), ChannelPromise(late));
  CHECK(late.future().is_done());
  CHECK_FALSE(late.future().is_success());

  // The server reads the data, then close_notify (a clean end: no truncation), answers it and
  // closes; the client, still reading, takes the answer and closes too.
  pair.server->write(ByteBuf::from("reply before the end"));
  pair.server->flush();
  pair.pump();
  CHECK(TlsPair::read_all(*pair.server) == "last words");
  CHECK(TlsPair::read_all(*pair.client) == "reply before the end");
  CHECK_FALSE(pair.server->is_open());
  CHECK_FALSE(pair.client->is_open());
  CHECK(pair.server->exceptions().empty());
  CHECK(pair.client->exceptions().empty());
}

TEST_CASE("a lingering close of HttpServerCodec behind TLS sends close_notify before the FIN") {
  auto client_ssl = std::make_shared<SslHandler>(client_context(), "localhost");
  auto server_ssl = std::make_shared<SslHandler>(server_context());
  auto log = std::make_shared<Log>();
  auto server = EmbeddedChannel::create(std::make_shared<WireLog>(log), server_ssl,
                                        std::make_shared<http::HttpServerCodec>());
  TlsPair pair(client_ssl, server_ssl, server);
  pair.pump();
  REQUIRE(client_ssl->handshake_future().is_success());
  REQUIRE(server_ssl->handshake_future().is_success());
  log->clear();

  // A malformed request: 400, Connection: close, and a lingering close (the output shut down,
  // the input drained for a while).
  pair.client->write_and_flush(ByteBuf::from("GET / HTTP/1.1\r\n\r\n"));
  pair.pump();
  const std::string response = TlsPair::read_all(*pair.client);
  CHECK(response.rfind("HTTP/1.1 400 Bad Request\r\n", 0) == 0);
  CHECK(server->is_output_shutdown());
  // On the wire: the response, close_notify, then the output shutdown.
  REQUIRE(log->size() >= 2);
  CHECK(log->back() == "shutdown_output");
  CHECK((*log)[log->size() - 2] == "write");
  // The client saw close_notify: a clean end, answered with its own, no truncation.
  CHECK_FALSE(pair.client->is_open());
  CHECK(pair.client->exceptions().empty());
  CHECK(pair.client_errors.empty());
  // The server read the client's close_notify (reading went on after the half-close) and closed.
  CHECK_FALSE(server->is_open());
  CHECK(pair.server_errors.empty());
  CHECK(server->exceptions().empty());
}
