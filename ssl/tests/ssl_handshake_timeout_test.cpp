// The handshake deadline of SslHandler: a peer that never completes the handshake is dropped
// after SslContextBuilder::handshake_timeout on the channel's clock.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include <trellis/ssl/ssl_context_builder.hpp>
#include <trellis/ssl/ssl_error.hpp>
#include <trellis/ssl/ssl_handler.hpp>

#include "test_pki.hpp"
#include "tls_pair.hpp"

using namespace trellis;
using namespace trellis::ssl;
using namespace std::chrono_literals;
using trellis::ssl::testing::test_pki;
using trellis::ssl::testing::TlsPair;

namespace {

SslContextBuilder server_builder() {
  return SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key);
}

SslContextBuilder client_builder() {
  return SslContextBuilder::for_client().trust_ca_file(test_pki().ca_cert);
}

// A channel with `handler`, registered (and so active) with its clock frozen first.
std::shared_ptr<EmbeddedChannel> frozen_channel(std::shared_ptr<SslHandler> handler) {
  EmbeddedChannel::Options options;
  options.register_channel = false;
  auto ch = EmbeddedChannel::create(options, std::move(handler));
  ch->freeze_time();
  ch->register_channel();
  return ch;
}

void check_timed_out(EmbeddedChannel& ch, SslHandler& handler) {
  CHECK_FALSE(ch.is_open());
  const Future<void> f = handler.handshake_future();
  REQUIRE(f.is_done());
  REQUIRE_FALSE(f.is_success());
  try {
    std::rethrow_exception(f.cause());
  } catch (const SslHandshakeError& e) {
    CHECK(std::string(e.what()).find("timed out") != std::string::npos);
  } catch (...) {
    FAIL("not an SslHandshakeError");
  }
  // The failure was fired into the pipeline too.
  REQUIRE(ch.exceptions().size() == 1);
  CHECK_THROWS_AS(std::rethrow_exception(ch.exceptions().front()), SslHandshakeError);
}

}  // namespace

TEST_CASE("a server whose client never speaks closes after the default 10 s handshake timeout") {
  auto handler = std::make_shared<SslHandler>(server_builder().build());
  auto ch = frozen_channel(handler);
  ch->advance_by(10s - 1ms);
  CHECK(ch->is_open());
  CHECK_FALSE(handler->handshake_future().is_done());
  ch->advance_by(1ms);
  check_timed_out(*ch, *handler);
}

TEST_CASE("a client whose server never answers closes after the configured handshake timeout") {
  auto handler =
      std::make_shared<SslHandler>(client_builder().handshake_timeout(2s).build(), "localhost");
  auto ch = frozen_channel(handler);
  CHECK_FALSE(ch->outbound_messages().empty());  // the ClientHello went out
  ch->advance_by(2s - 1ms);
  CHECK(ch->is_open());
  ch->advance_by(1ms);
  check_timed_out(*ch, *handler);
}

TEST_CASE("set_handshake_timeout overrides the context's timeout for one handler") {
  auto handler = std::make_shared<SslHandler>(server_builder().handshake_timeout(30s).build());
  handler->set_handshake_timeout(500ms);
  auto ch = frozen_channel(handler);
  ch->advance_by(499ms);
  CHECK(ch->is_open());
  ch->advance_by(1ms);
  check_timed_out(*ch, *handler);
}

TEST_CASE("the handshake timer starts when the handler is added to an active channel") {
  auto ch = EmbeddedChannel::create();
  ch->freeze_time();
  ch->advance_by(1h);  // long before the handler came
  auto handler = std::make_shared<SslHandler>(server_builder().handshake_timeout(1s).build());
  ch->pipeline().add_first("tls", handler);
  ch->advance_by(999ms);
  CHECK(ch->is_open());
  ch->advance_by(1ms);
  check_timed_out(*ch, *handler);
}

TEST_CASE("a completed handshake is not cut by the handshake timeout") {
  TlsPair pair(client_builder().handshake_timeout(1s).build(),
               server_builder().handshake_timeout(1s).build());
  pair.client->freeze_time();
  pair.server->freeze_time();
  pair.pump();
  REQUIRE(pair.client_ssl->handshake_future().is_success());
  REQUIRE(pair.server_ssl->handshake_future().is_success());
  pair.client->advance_by(1min);
  pair.server->advance_by(1min);
  CHECK(pair.client->is_open());
  CHECK(pair.server->is_open());
  pair.client->write_outbound(ByteBuf::from("still here"));
  pair.pump();
  CHECK(TlsPair::read_all(*pair.server) == "still here");
  CHECK(pair.client->exceptions().empty());
  CHECK(pair.server->exceptions().empty());
}

TEST_CASE("a handshake timeout of zero turns the deadline off") {
  auto handler = std::make_shared<SslHandler>(server_builder().handshake_timeout(0s).build());
  auto ch = frozen_channel(handler);
  ch->advance_by(1h);
  CHECK(ch->is_open());
  CHECK_FALSE(handler->handshake_future().is_done());
}
