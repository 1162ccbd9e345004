// A context chosen by SNI brings its own protocol settings (versions, TLS 1.2 cipher suites,
// TLS 1.3 suites, groups), not only its certificate: OpenSSL's SSL_set_SSL_CTX does not copy
// them, so a vhost restricted to TLS 1.3 would otherwise negotiate TLS 1.2 with the defaults.
#include <doctest/doctest.h>

#include <openssl/ssl.h>

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

// The default vhost (TLS 1.2 and 1.3, default suites) chooses vhost for alt.example.
SslContext sni_server(const SslContext& vhost) {
  return SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key)
      .sni([vhost](std::string_view name) -> std::optional<SslContext> {
        if (name == "alt.example") return vhost;
        return std::nullopt;
      })
      .build();
}

SslContextBuilder alt_builder() {
  return SslContextBuilder::for_server(test_pki().alt_cert, test_pki().alt_key);
}

SslContextBuilder client_builder() {
  return SslContextBuilder::for_client().trust_ca_file(test_pki().ca_cert);
}

bool failed(const Future<void>& f) { return f.is_done() && !f.is_success(); }

std::string cipher_of(const SslHandler& h) {
  return SSL_CIPHER_get_name(SSL_get_current_cipher(h.native_handle()));
}

}  // namespace

TEST_CASE("SNI: the chosen vhost's minimum version is enforced") {
  const SslContext server = sni_server(alt_builder().min_version(TlsVersion::kTls13).build());
  const SslContext tls12_client = client_builder().max_version(TlsVersion::kTls12).build();

  TlsPair refused(tls12_client, server, "alt.example");
  refused.pump();
  CHECK(failed(refused.client_ssl->handshake_future()));
  CHECK(failed(refused.server_ssl->handshake_future()));

  // The default vhost still speaks TLS 1.2.
  TlsPair accepted(tls12_client, server, "localhost");
  accepted.pump();
  REQUIRE(accepted.client_ssl->handshake_future().is_success());
  CHECK(accepted.server_ssl->protocol_version() == "TLSv1.2");
}

TEST_CASE("SNI: the chosen vhost's maximum version and TLS 1.2 suites are used") {
  const SslContext server = sni_server(alt_builder()
                                           .max_version(TlsVersion::kTls12)
                                           .ciphers("ECDHE-ECDSA-CHACHA20-POLY1305")
                                           .build());
  TlsPair pair(client_builder().build(), server, "alt.example");
  pair.pump();
  REQUIRE(pair.client_ssl->handshake_future().is_success());
  CHECK(pair.server_ssl->requested_server_name() == "alt.example");
  CHECK(pair.server_ssl->protocol_version() == "TLSv1.2");
  CHECK(cipher_of(*pair.server_ssl) == "ECDHE-ECDSA-CHACHA20-POLY1305");
  // The default vhost negotiates TLS 1.3 with its default suite.
  TlsPair other(client_builder().build(), server, "localhost");
  other.pump();
  REQUIRE(other.client_ssl->handshake_future().is_success());
  CHECK(other.server_ssl->protocol_version() == "TLSv1.3");
  CHECK(cipher_of(*other.server_ssl) == "TLS_AES_128_GCM_SHA256");
}

TEST_CASE("SNI: the chosen vhost's TLS 1.3 suites and groups are used") {
  const SslContext server = sni_server(
      alt_builder().ciphersuites("TLS_CHACHA20_POLY1305_SHA256").groups("P-384").build());
  TlsPair pair(client_builder().build(), server, "alt.example");
  pair.pump();
  REQUIRE(pair.client_ssl->handshake_future().is_success());
  CHECK(cipher_of(*pair.server_ssl) == "TLS_CHACHA20_POLY1305_SHA256");
  CHECK(SSL_get_negotiated_group(pair.server_ssl->native_handle()) == NID_secp384r1);

  // A client that offers only groups the vhost refuses does not get in.
  const SslContext x25519_only = client_builder().groups("X25519").build();
  TlsPair refused(x25519_only, server, "alt.example");
  refused.pump();
  CHECK(failed(refused.client_ssl->handshake_future()));
  // The default vhost takes it.
  TlsPair accepted(x25519_only, server, "localhost");
  accepted.pump();
  CHECK(accepted.client_ssl->handshake_future().is_success());
}
