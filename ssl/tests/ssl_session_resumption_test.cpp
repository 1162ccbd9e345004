// Session resumption on the server: tickets under keys that rotate on the loop's clock (a
// replaced key still resumes, and renews, until its tickets may have expired; then it is
// forgotten), SslContext::rotate_session_ticket_keys, and the bounded session cache used
// without tickets.
#include <doctest/doctest.h>

#include <openssl/ssl.h>

#include <chrono>
#include <memory>
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

SslContext client_context() {
  return SslContextBuilder::for_client().trust_ca_file(test_pki().ca_cert).build();
}

// One connection from client to server whose loop clock is `later` ahead of the real one when
// the handshake runs, closed with close_notify (OpenSSL drops the session of a connection that
// ends without it from the server's cache); returns whether the session was resumed (checked
// on both sides).
bool connect(const SslContext& client, const SslContext& server,
             std::chrono::nanoseconds later = 0ns) {
  auto server_ssl = std::make_shared<SslHandler>(server);
  server_ssl->set_handshake_timeout(0ns);  // the clock jumps: no deadline to fire
  TlsPair pair(std::make_shared<SslHandler>(client, "localhost"), server_ssl);
  pair.server->advance_by(later);
  pair.pump();
  REQUIRE(pair.client_ssl->handshake_future().is_success());
  REQUIRE(pair.server_ssl->handshake_future().is_success());
  CHECK(pair.client_ssl->is_session_reused() == pair.server_ssl->is_session_reused());
  // The connection works either way.
  pair.client->write_outbound(ByteBuf::from("ping"));
  pair.pump();
  CHECK(TlsPair::read_all(*pair.server) == "ping");
  pair.client->close();
  pair.pump();
  CHECK_FALSE(pair.server->is_open());
  return pair.server_ssl->is_session_reused();
}

}  // namespace

TEST_CASE(
    "session tickets: keys rotate on the loop's clock; a replaced key resumes until its "
    "tickets may have expired") {
  const SslContext server =
      server_builder().session_ticket_key_rotation(1h).session_timeout(2h).build();
  const SslContext a = client_context();
  const SslContext b = client_context();
  CHECK(server.session_ticket_keys() == 0);  // made by the first handshake

  // Both clients get a ticket under the first key.
  CHECK_FALSE(connect(a, server));
  CHECK_FALSE(connect(b, server));
  CHECK(server.session_ticket_keys() == 1);
  CHECK(server.cached_sessions() == 0);  // tickets keep no state on the server

  // Within the rotation interval: the same key, resumed.
  CHECK(connect(a, server, 30min));
  CHECK(server.session_ticket_keys() == 1);

  // Past it: the ticket still resumes, and is renewed under a new key.
  CHECK(connect(a, server, 61min));
  CHECK(server.session_ticket_keys() == 2);
  // a's renewed ticket is under the new key, which a clock 2 hours later still holds.
  CHECK(connect(a, server, 61min + 119min));

  // b's ticket is under the first key, replaced at ~61 min: 2 hours (the session timeout) after
  // that it is forgotten, and b does a full handshake.
  CHECK_FALSE(connect(b, server, 61min + 121min));
  CHECK(server.session_ticket_keys() == 2);  // the newest two; the first is gone
  // The full handshake gave b a ticket under the newest key.
  CHECK(connect(b, server, 61min + 122min));
}

TEST_CASE("session tickets: rotate_session_ticket_keys moves new tickets to a new key at once") {
  SslContext server = server_builder().build();
  const SslContext a = client_context();
  const SslContext b = client_context();
  CHECK_FALSE(connect(a, server));
  CHECK_FALSE(connect(b, server));
  REQUIRE(server.session_ticket_keys() == 1);

  server.rotate_session_ticket_keys();
  CHECK(connect(a, server));  // under the old key: resumed, renewed under a new one
  CHECK(server.session_ticket_keys() == 2);
  CHECK(connect(b, server));  // the old key still decrypts
  CHECK(connect(a, server));  // now under the new key
  CHECK(server.session_ticket_keys() == 2);
}

TEST_CASE("session tickets: a context with rotation off keeps one key") {
  const SslContext server = server_builder().session_ticket_key_rotation(0ns).build();
  const SslContext a = client_context();
  CHECK_FALSE(connect(a, server));
  CHECK(connect(a, server, 24h));
  CHECK(server.session_ticket_keys() == 1);
}

TEST_CASE("without session tickets, sessions resume from the server's cache") {
  const SslContext server = server_builder().session_tickets(false).build();
  CHECK(server.session_ticket_keys() == 0);
  const SslContext c1 = client_context();
  const SslContext c2 = client_context();
  CHECK_FALSE(connect(c1, server));
  CHECK_FALSE(connect(c2, server));
  CHECK(server.cached_sessions() == 2);
  CHECK(connect(c1, server));
  CHECK(connect(c2, server));
  CHECK(connect(c1, server));
}

TEST_CASE("the server's session cache is bounded, dropping the least recently used session") {
  const SslContext server = server_builder().session_tickets(false).session_cache_size(2).build();
  const SslContext c1 = client_context();
  const SslContext c2 = client_context();
  const SslContext c3 = client_context();
  for (const SslContext* c : {&c1, &c2, &c3}) {
    CHECK_FALSE(connect(*c, server));
    CHECK(server.cached_sessions() <= 2);
  }
  CHECK(connect(c3, server));        // the newest is there
  CHECK_FALSE(connect(c1, server));  // the oldest was dropped
  CHECK(server.cached_sessions() <= 2);
  CHECK(server.cached_sessions() >= 1);
}

TEST_CASE("a TLS 1.2 client that takes no tickets resumes from the server's cache") {
  const SslContext server = server_builder().build();
  const SslContext client = SslContextBuilder::for_client()
                                .trust_ca_file(test_pki().ca_cert)
                                .max_version(TlsVersion::kTls12)
                                .build();
  SSL_CTX_set_options(client.native_handle(), SSL_OP_NO_TICKET);
  CHECK_FALSE(connect(client, server));
  CHECK(server.cached_sessions() == 1);
  CHECK(connect(client, server));
}

TEST_CASE("a server with session_cache_size(0) and no tickets never resumes") {
  const SslContext server = server_builder().session_tickets(false).session_cache_size(0).build();
  const SslContext client = client_context();
  CHECK_FALSE(connect(client, server));
  CHECK_FALSE(connect(client, server));
  CHECK(server.cached_sessions() == 0);
}

TEST_CASE("session_timeout must be positive") {
  CHECK_THROWS_AS(server_builder().session_timeout(0s).build(), SslError);
}
