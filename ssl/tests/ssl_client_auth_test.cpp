// Mutual TLS: a server context with verify_peer(true) requires a client certificate from its
// trusted CAs, names those CAs in its CertificateRequest, and does so as well when SNI chose it.
#include <doctest/doctest.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <optional>
#include <string>
#include <string_view>

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

// A server that requires client certificates from the test CA.
SslContext mutual_server(const std::string& cert, const std::string& key) {
  return SslContextBuilder::for_server(cert, key)
      .trust_ca_file(test_pki().ca_cert)
      .verify_peer(true)
      .build();
}

// A default vhost without client certificates whose SNI callback picks `alt` for alt.example.
SslContext sni_server(const SslContext& alt) {
  return SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key)
      .sni([alt](std::string_view name) -> std::optional<SslContext> {
        if (name == "alt.example") return alt;
        return std::nullopt;
      })
      .build();
}

SslContextBuilder client_builder() {
  return SslContextBuilder::for_client().trust_ca_file(test_pki().ca_cert);
}

struct Setup {
  const char* name;
  SslContext server;
  std::string host;
};

// The same server policy, presented directly and chosen through SNI.
Setup direct() {
  return {"direct", mutual_server(test_pki().server_cert, test_pki().server_key), "localhost"};
}
Setup through_sni() {
  return {"through SNI", sni_server(mutual_server(test_pki().alt_cert, test_pki().alt_key)),
          "alt.example"};
}

void check_refused(TlsPair& pair, long expected_verify_result) {
  const Future<void> f = pair.server_ssl->handshake_future();
  REQUIRE(f.is_done());
  REQUIRE_FALSE(f.is_success());
  try {
    std::rethrow_exception(f.cause());
  } catch (const SslHandshakeError& e) {
    CHECK(e.verify_result() == expected_verify_result);
  }
  CHECK_FALSE(pair.server->is_open());
  CHECK_FALSE(pair.client->is_open());  // the server's alert reached the client
}

// The subject names of the CAs the server's CertificateRequest listed, as the client saw them.
std::vector<std::string> requested_ca_names(SslHandler& client) {
  std::vector<std::string> names;
  STACK_OF(X509_NAME)* list = SSL_get_client_CA_list(client.native_handle());
  for (int i = 0; list != nullptr && i < sk_X509_NAME_num(list); ++i) {
    char buf[256];
    X509_NAME_oneline(sk_X509_NAME_value(list, i), buf, sizeof buf);
    names.emplace_back(buf);
  }
  return names;
}

// A client handler for `host` that offers `session` for resumption.
std::shared_ptr<SslHandler> offering(const SslContext& client, const std::string& host,
                                     SSL_SESSION* session) {
  auto handler = std::make_shared<SslHandler>(client, host);
  REQUIRE(SSL_set_session(handler->native_handle(), session) == 1);
  return handler;
}

}  // namespace

TEST_CASE("verify_peer(true) on a server refuses a client without a certificate") {
  for (Setup s : {direct(), through_sni()}) {
    CAPTURE(s.name);
    TlsPair pair(client_builder().build(), s.server, s.host);
    pair.pump();
    check_refused(pair, X509_V_OK);  // no certificate: not a verification result
  }
}

TEST_CASE("verify_peer(true) on a server accepts a client certificate from its trusted CA") {
  for (Setup s : {direct(), through_sni()}) {
    CAPTURE(s.name);
    auto client =
        client_builder().key_manager(test_pki().client_cert, test_pki().client_key).build();
    TlsPair pair(client, s.server, s.host);
    pair.pump();
    REQUIRE(pair.client_ssl->handshake_future().is_success());
    REQUIRE(pair.server_ssl->handshake_future().is_success());
    X509* peer = SSL_get0_peer_certificate(pair.server_ssl->native_handle());
    REQUIRE(peer != nullptr);
    char cn[64] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
    CHECK(std::string(cn) == "client.example");
    pair.client->write_outbound(ByteBuf::from("authenticated"));
    pair.pump();
    CHECK(TlsPair::read_all(*pair.server) == "authenticated");
  }
}

TEST_CASE("verify_peer(true) on a server refuses a client certificate from another CA") {
  for (Setup s : {direct(), through_sni()}) {
    CAPTURE(s.name);
    auto client =
        client_builder()
            .key_manager(test_pki().untrusted_client_cert, test_pki().untrusted_client_key)
            .build();
    TlsPair pair(client, s.server, s.host);
    pair.pump();
    check_refused(pair, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  }
}

TEST_CASE("a server requiring client certificates names its trusted CAs in the request") {
  for (Setup s : {direct(), through_sni()}) {
    CAPTURE(s.name);
    auto client =
        client_builder().key_manager(test_pki().client_cert, test_pki().client_key).build();
    TlsPair pair(client, s.server, s.host);
    pair.pump();
    REQUIRE(pair.client_ssl->handshake_future().is_success());
    const auto names = requested_ca_names(*pair.client_ssl);
    REQUIRE(names.size() == 1);
    CHECK(names[0] == "/CN=trellis test CA");
  }
}

TEST_CASE("key_manager on a server builder replaces its certificate") {
  auto server = SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key)
                    .key_manager(test_pki().alt_cert, test_pki().alt_key)
                    .build();
  TlsPair pair(client_builder().build(), server, "alt.example");
  pair.pump();
  CHECK(pair.client_ssl->handshake_future().is_success());
}

TEST_CASE("key_manager with a key that does not match its certificate is refused") {
  CHECK_THROWS_WITH_AS(
      client_builder().key_manager(test_pki().client_cert, test_pki().server_key).build(),
      doctest::Contains("key values mismatch"), SslError);
}

TEST_CASE("a session from one SNI vhost is not resumed under another") {
  const SslContext alt =
      SslContextBuilder::for_server(test_pki().alt_cert, test_pki().alt_key).build();
  const SslContext server = sni_server(alt);
  // No session cache of its own: the test offers the session explicitly.
  const SslContext client = client_builder().verify_hostname(false).session_cache_size(0).build();
  SSL_SESSION* session = nullptr;
  {
    TlsPair first(client, server, "alt.example");
    first.pump();
    REQUIRE(first.client_ssl->handshake_future().is_success());
    session = SSL_get1_session(first.client_ssl->native_handle());  // with its ticket
    REQUIRE(session != nullptr);
    REQUIRE(SSL_SESSION_is_resumable(session) == 1);
  }
  // Control: the same vhost resumes it.
  {
    TlsPair again(offering(client, "alt.example", session), std::make_shared<SslHandler>(server));
    again.pump();
    REQUIRE(again.server_ssl->handshake_future().is_success());
    CHECK(again.server_ssl->is_session_reused());
  }
  // The default vhost (another context) does not.
  TlsPair other(offering(client, "localhost", session), std::make_shared<SslHandler>(server));
  other.pump();
  REQUIRE(other.server_ssl->handshake_future().is_success());
  CHECK_FALSE(other.server_ssl->is_session_reused());
  SSL_SESSION_free(session);
}
