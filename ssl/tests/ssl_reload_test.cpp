// SslContext::reload: a running server swaps its certificate and key (here one about to expire)
// for every handler made afterwards, while connections already made go on with theirs; a
// builder that fails changes nothing; SNI vhosts and clients reload the same way; session
// tickets survive a reload that keeps the certificate.
#include <doctest/doctest.h>

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

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

SslContextBuilder client_builder() {
  return SslContextBuilder::for_client().trust_ca_file(test_pki().ca_cert);
}

// A client whose clock for certificate checks is `days` ahead: the day the expiring
// certificate has expired.
SslContext client_in_days(long days) {
  SslContext c = client_builder().build();
  X509_VERIFY_PARAM_set_time(SSL_CTX_get0_param(c.native_handle()),
                             std::time(nullptr) + days * 86400);
  return c;
}

bool failed(const Future<void>& f) { return f.is_done() && !f.is_success(); }

std::string leaf_fingerprint(const SslHandler& h) {
  const auto chain = h.peer_certificates();
  REQUIRE_FALSE(chain.empty());
  return chain.front().sha256_fingerprint;
}

void exchange(TlsPair& pair, const std::string& up, const std::string& down) {
  pair.client->write_outbound(ByteBuf::from(up));
  pair.server->write_outbound(ByteBuf::from(down));
  pair.pump();
  CHECK(TlsPair::read_all(*pair.server) == up);
  CHECK(TlsPair::read_all(*pair.client) == down);
}

}  // namespace

TEST_CASE("reload: an expiring certificate is replaced mid-run without dropping connections") {
  SslContext server =
      SslContextBuilder::for_server(test_pki().expiring_cert, test_pki().expiring_key).build();
  const SslContext today = client_builder().build();
  const SslContext in_two_days = client_in_days(2);

  TlsPair open_before(today, server);
  open_before.pump();
  REQUIRE(open_before.client_ssl->handshake_future().is_success());
  const std::string old_leaf = leaf_fingerprint(*open_before.client_ssl);
  exchange(open_before, "hello", "hi");

  // Once the certificate has expired, new clients refuse it.
  TlsPair refused(in_two_days, server);
  refused.pump();
  CHECK(failed(refused.client_ssl->handshake_future()));

  server.reload(SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key));

  // The connection made before goes on, with the certificate it started with.
  CHECK(open_before.client->is_open());
  CHECK(open_before.server->is_open());
  exchange(open_before, "still there?", "yes");
  CHECK(leaf_fingerprint(*open_before.client_ssl) == old_leaf);

  // New connections get the new certificate, which is valid in two days too.
  TlsPair after(in_two_days, server);
  after.pump();
  REQUIRE(after.client_ssl->handshake_future().is_success());
  CHECK(leaf_fingerprint(*after.client_ssl) != old_leaf);
  exchange(after, "new", "cert");
}

TEST_CASE("reload: a builder that fails leaves the context as it was") {
  SslContext server =
      SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key).build();
  SSL_CTX* before = server.native_handle();
  CHECK_THROWS_AS(server.reload(SslContextBuilder::for_server(test_pki().dir + "/missing.pem",
                                                              test_pki().server_key)),
                  SslError);
  // A key that does not match the certificate.
  CHECK_THROWS_AS(
      server.reload(SslContextBuilder::for_server(test_pki().server_cert, test_pki().alt_key)),
      SslError);
  // The other side.
  CHECK_THROWS_AS(server.reload(client_builder()), SslError);
  CHECK(server.native_handle() == before);
  TlsPair pair(client_builder().build(), server);
  pair.pump();
  CHECK(pair.client_ssl->handshake_future().is_success());
}

TEST_CASE("reload: every copy of the context and an SNI vhost see the new configuration") {
  SslContext vhost =
      SslContextBuilder::for_server(test_pki().expiring_cert, test_pki().expiring_key).build();
  const SslContext copy = vhost;  // e.g. held by the SNI callback
  const SslContext server = SslContextBuilder::for_server(test_pki().alt_cert, test_pki().alt_key)
                                .sni([copy](std::string_view name) -> std::optional<SslContext> {
                                  if (name == "localhost") return copy;
                                  return std::nullopt;
                                })
                                .build();
  const SslContext in_two_days = client_in_days(2);
  {
    TlsPair pair(in_two_days, server, "localhost");
    pair.pump();
    CHECK(failed(pair.client_ssl->handshake_future()));  // the vhost's certificate expired
  }
  vhost.reload(SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key));
  CHECK(copy.native_handle() == vhost.native_handle());
  TlsPair pair(in_two_days, server, "localhost");
  pair.pump();
  REQUIRE(pair.client_ssl->handshake_future().is_success());
  CHECK(pair.server_ssl->requested_server_name() == "localhost");
}

TEST_CASE("reload: a client context picks up new trust for new connections") {
  SslContext client = SslContextBuilder::for_client().trust_ca_file(test_pki().alt_cert).build();
  const SslContext server =
      SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key).build();
  {
    TlsPair pair(client, server);
    pair.pump();
    CHECK(failed(pair.client_ssl->handshake_future()));  // not a CA it trusts
  }
  client.reload(client_builder());
  TlsPair pair(client, server);
  pair.pump();
  CHECK(pair.client_ssl->handshake_future().is_success());
  CHECK_THROWS_AS(
      client.reload(SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key)),
      SslError);
}

TEST_CASE("reload: session tickets resume across a reload that keeps the certificate") {
  const auto builder = SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key);
  SslContext server = builder.build();
  const SslContext client = client_builder().build();
  auto connect = [&] {
    TlsPair pair(client, server);
    pair.pump();
    REQUIRE(pair.client_ssl->handshake_future().is_success());
    pair.client->close();
    pair.pump();
    return pair.server_ssl->is_session_reused();
  };
  CHECK_FALSE(connect());
  server.reload(builder);
  CHECK(connect());
  // A new certificate: sessions made under the old one are not resumed.
  server.reload(SslContextBuilder::for_server(test_pki().expiring_cert, test_pki().expiring_key));
  CHECK_FALSE(connect());
  CHECK(connect());
}

TEST_CASE("reload: a fresh OCSP response is stapled to connections made afterwards") {
  SslContext server =
      SslContextBuilder::for_server(test_pki().server_chain, test_pki().server_key).build();
  const SslContext client =
      client_builder().request_ocsp_stapling(true).session_cache_size(0).build();
  auto stapled = [&] {
    TlsPair pair(client, server);
    pair.pump();
    REQUIRE(pair.client_ssl->handshake_future().is_success());
    return pair.client_ssl->stapled_ocsp_response();
  };
  CHECK(stapled().empty());
  // A response already past its next update is refused; the context staples nothing still.
  CHECK_THROWS_AS(
      server.reload(SslContextBuilder::for_server(test_pki().server_chain, test_pki().server_key)
                        .ocsp_response_file(test_pki().server_ocsp_expired)),
      SslError);
  CHECK(stapled().empty());
  server.reload(SslContextBuilder::for_server(test_pki().server_chain, test_pki().server_key)
                    .ocsp_response_file(test_pki().server_ocsp));
  CHECK_FALSE(stapled().empty());
}

// n connections from client to server, each closed with close_notify; how many handshakes
// succeeded. The channels stay on the calling thread; the contexts are shared.
static int successful_connections(const SslContext& client, const SslContext& server, int n) {
  int ok = 0;
  for (int i = 0; i < n; ++i) {
    TlsPair pair(client, server);
    pair.pump();
    const Future<void> handshake = pair.client_ssl->handshake_future();
    ok += handshake.is_success() ? 1 : 0;
    pair.client->close();
    pair.pump();
  }
  return ok;
}

TEST_CASE("reload and key rotation while handshakes run on other threads") {
  SslContext server =
      SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key).build();
  const SslContext client = client_builder().build();
  int a_ok = 0;
  int b_ok = 0;
  std::atomic<bool> stop{false};
  std::thread a([&] { a_ok = successful_connections(client, server, 20); });
  std::thread b([&] { b_ok = successful_connections(client, server, 20); });
  std::thread operator_thread([&] {
    for (int i = 0; !stop.load(); ++i) {
      server.reload(SslContextBuilder::for_server(
          i % 2 == 0 ? test_pki().expiring_cert : test_pki().server_cert,
          i % 2 == 0 ? test_pki().expiring_key : test_pki().server_key));
      server.rotate_session_ticket_keys();
      (void)server.session_ticket_keys();
      (void)server.cached_sessions();
      std::this_thread::yield();
    }
  });
  a.join();
  b.join();
  stop = true;
  operator_thread.join();
  CHECK(a_ok == 20);
  CHECK(b_ok == 20);
}
