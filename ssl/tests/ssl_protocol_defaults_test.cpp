// The protocol defaults of SslContextBuilder (forward secrecy and AEAD ciphers only, the server's
// cipher order, X25519 first) and the setters that change them.
#include <doctest/doctest.h>

#include <openssl/ssl.h>

#include <string>

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

SslContextBuilder server_builder() {
  return SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key);
}

SslContextBuilder client_builder() {
  return SslContextBuilder::for_client().trust_ca_file(test_pki().ca_cert);
}

// A client context limited to TLS 1.2 and `ciphers`, set through OpenSSL directly.
SslContext tls12_client(const char* ciphers) {
  SslContext ctx = client_builder().build();
  REQUIRE(SSL_CTX_set_max_proto_version(ctx.native_handle(), TLS1_2_VERSION) == 1);
  REQUIRE(SSL_CTX_set_cipher_list(ctx.native_handle(), ciphers) == 1);
  return ctx;
}

std::string cipher_of(SslHandler& h) { return SSL_get_cipher_name(h.native_handle()); }

}  // namespace

TEST_CASE("by default TLS 1.3 is negotiated with X25519") {
  TlsPair pair(client_builder().build(), server_builder().build());
  pair.pump();
  REQUIRE(pair.server_ssl->handshake_future().is_success());
  CHECK(pair.server_ssl->protocol_version() == "TLSv1.3");
  CHECK(SSL_get_negotiated_group(pair.server_ssl->native_handle()) == NID_X25519);
}

TEST_CASE("a client offering only CBC cipher suites is refused") {
  TlsPair pair(tls12_client("ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES128-SHA:"
                            "ECDHE-ECDSA-AES256-SHA384:ECDHE-ECDSA-AES256-SHA"),
               server_builder().build());
  pair.pump();
  REQUIRE(pair.server_ssl->handshake_future().is_done());
  CHECK_FALSE(pair.server_ssl->handshake_future().is_success());
}

TEST_CASE("a TLS 1.2 server enforces its own cipher order") {
  // The client prefers ChaCha20; the server's default order puts AES-128-GCM first.
  TlsPair pair(tls12_client("ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256"),
               server_builder().build());
  pair.pump();
  REQUIRE(pair.server_ssl->handshake_future().is_success());
  CHECK(pair.server_ssl->protocol_version() == "TLSv1.2");
  CHECK(cipher_of(*pair.server_ssl) == "ECDHE-ECDSA-AES128-GCM-SHA256");
  CHECK(SSL_get_negotiated_group(pair.server_ssl->native_handle()) == NID_X25519);
}

TEST_CASE("the builder's version, cipher and group setters are applied") {
  const SslContext server = server_builder()
                                .max_version(TlsVersion::kTls12)
                                .ciphers("ECDHE-ECDSA-CHACHA20-POLY1305")
                                .groups("P-384")
                                .build();
  TlsPair pair(client_builder().build(), server);
  pair.pump();
  REQUIRE(pair.client_ssl->handshake_future().is_success());
  CHECK(pair.client_ssl->protocol_version() == "TLSv1.2");
  CHECK(cipher_of(*pair.client_ssl) == "ECDHE-ECDSA-CHACHA20-POLY1305");
  CHECK(SSL_get_negotiated_group(pair.server_ssl->native_handle()) == NID_secp384r1);

  const SslContext tls13 = server_builder()
                               .min_version(TlsVersion::kTls13)
                               .ciphersuites("TLS_CHACHA20_POLY1305_SHA256")
                               .build();
  TlsPair modern(client_builder().build(), tls13);
  modern.pump();
  REQUIRE(modern.client_ssl->handshake_future().is_success());
  CHECK(cipher_of(*modern.client_ssl) == "TLS_CHACHA20_POLY1305_SHA256");

  // A TLS 1.2-only client cannot talk to a TLS 1.3-only server.
  TlsPair old(tls12_client("ECDHE-ECDSA-AES128-GCM-SHA256"), tls13);
  old.pump();
  CHECK_FALSE(old.server_ssl->handshake_future().is_success());
}

TEST_CASE("invalid cipher lists, groups and version ranges are refused by build()") {
  CHECK_THROWS_AS(server_builder().ciphers("NO-SUCH-CIPHER").build(), SslError);
  CHECK_THROWS_AS(server_builder().ciphersuites("TLS_NO_SUCH").build(), SslError);
  CHECK_THROWS_AS(server_builder().groups("no-such-group").build(), SslError);
  CHECK_THROWS_AS(
      server_builder().min_version(TlsVersion::kTls13).max_version(TlsVersion::kTls12).build(),
      SslError);
}
