// SslContextBuilder::verify_callback: the application's decision on the peer's chain, after
// OpenSSL's verification, on a client (the server's chain) and on a server (a client's).
#include <doctest/doctest.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <cstdio>
#include <string>

#include <trellis/ssl/ssl_context_builder.hpp>
#include <trellis/ssl/ssl_error.hpp>
#include <trellis/ssl/ssl_handler.hpp>
#include <trellis/ssl/verify_callback.hpp>

#include "test_pki.hpp"
#include "tls_pair.hpp"

using namespace trellis;
using namespace trellis::ssl;
using trellis::ssl::testing::test_pki;
using trellis::ssl::testing::TlsPair;

namespace {

// The SHA-256 fingerprint (lowercase hex) of a PEM certificate file.
std::string fingerprint_of(const std::string& pem_file) {
  FILE* f = std::fopen(pem_file.c_str(), "r");
  REQUIRE(f != nullptr);
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  REQUIRE(cert != nullptr);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  REQUIRE(X509_digest(cert, EVP_sha256(), md, &n) == 1);
  X509_free(cert);
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", md[i]);
    hex += buf;
  }
  return hex;
}

SslContext server(const std::string& cert, const std::string& key) {
  return SslContextBuilder::for_server(cert, key).build();
}

// The handshake error of a side, which must have failed.
SslHandshakeError failure(SslHandler& ssl) {
  const Future<void> f = ssl.handshake_future();
  REQUIRE(f.is_done());
  REQUIRE_FALSE(f.is_success());
  try {
    std::rethrow_exception(f.cause());
  } catch (const SslHandshakeError& e) {
    return e;
  } catch (const std::exception& e) {
    FAIL("not an SslHandshakeError: " << e.what());
  }
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("verify_callback: a client's callback sees the server's chain and OpenSSL's verdict") {
  int calls = 0;
  PeerVerification seen;
  const auto client_ctx = SslContextBuilder::for_client()
                              .trust_ca_file(test_pki().ca_cert)
                              .verify_callback([&](const PeerVerification& peer) {
                                ++calls;
                                seen = peer;
                                return VerifyDecision::accept();
                              })
                              .build();
  TlsPair pair(client_ctx, server(test_pki().server_cert, test_pki().server_key));
  pair.pump();
  CHECK(pair.client_ssl->handshake_future().is_success());
  CHECK(pair.server_ssl->handshake_future().is_success());
  CHECK(calls == 1);
  REQUIRE(seen.chain.size() == 1);
  CHECK(seen.chain[0].subject == "CN=localhost");
  CHECK(seen.chain[0].sha256_fingerprint == fingerprint_of(test_pki().server_cert));
  CHECK(seen.openssl_accepted());
  CHECK(seen.openssl_result == X509_V_OK);
}

TEST_CASE("verify_callback: a client's refusal fails the handshake with its reason") {
  PeerVerification seen;
  const auto client_ctx = SslContextBuilder::for_client()
                              .trust_ca_file(test_pki().ca_cert)
                              .verify_callback([&](const PeerVerification& peer) {
                                seen = peer;
                                return VerifyDecision::refuse("localhost is on the deny list");
                              })
                              .build();
  TlsPair pair(client_ctx, server(test_pki().server_cert, test_pki().server_key));
  pair.pump();
  CHECK(seen.openssl_accepted());  // OpenSSL had nothing against it
  const SslHandshakeError e = failure(*pair.client_ssl);
  CHECK(std::string(e.what()).find("localhost is on the deny list") != std::string::npos);
  CHECK(e.verify_result() == X509_V_ERR_APPLICATION_VERIFICATION);
  CHECK(e.verify_result_text() == "localhost is on the deny list");
  CHECK_FALSE(pair.server_ssl->handshake_future().is_success());  // the client's alert
  CHECK_FALSE(pair.client->is_open());
  CHECK_FALSE(pair.server->is_open());
}

TEST_CASE("verify_callback: a server's refusal of a client certificate carries its reason") {
  PeerVerification seen;
  const auto server_ctx =
      SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key)
          .trust_ca_file(test_pki().ca_cert)
          .verify_peer(true)
          .verify_callback([&](const PeerVerification& peer) {
            seen = peer;
            if (peer.chain.at(0).subject == "CN=client.example") {
              return VerifyDecision::refuse("client.example is suspended");
            }
            return VerifyDecision::accept();
          })
          .build();
  const auto client_ctx = SslContextBuilder::for_client()
                              .trust_ca_file(test_pki().ca_cert)
                              .key_manager(test_pki().client_cert, test_pki().client_key)
                              .build();
  TlsPair pair(client_ctx, server_ctx);
  pair.pump();
  REQUIRE_FALSE(seen.chain.empty());
  CHECK(seen.chain[0].subject == "CN=client.example");
  CHECK(seen.openssl_accepted());
  const SslHandshakeError e = failure(*pair.server_ssl);
  CHECK(std::string(e.what()).find("client.example is suspended") != std::string::npos);
  CHECK(e.verify_result() == X509_V_ERR_APPLICATION_VERIFICATION);
  // In TLS 1.3 the client is done before the server checks its certificate: the server's alert
  // closes it.
  CHECK_FALSE(pair.server->is_open());
  CHECK_FALSE(pair.client->is_open());
}

TEST_CASE("verify_callback: pinning by fingerprint") {
  // The pinned certificate is signed by a CA the client does not trust: the pin decides.
  const std::string pin = fingerprint_of(test_pki().untrusted_cert);
  const auto client_ctx = SslContextBuilder::for_client()
                              .trust_ca_file(test_pki().ca_cert)
                              .verify_callback([pin](const PeerVerification& peer) {
                                if (peer.chain.at(0).sha256_fingerprint == pin) {
                                  return VerifyDecision::accept();
                                }
                                return VerifyDecision::refuse("certificate not pinned");
                              })
                              .build();
  SUBCASE("the pinned certificate is accepted although OpenSSL refused its chain") {
    long openssl_result = 0;
    const auto observing = SslContextBuilder::for_client()
                               .trust_ca_file(test_pki().ca_cert)
                               .verify_callback([&](const PeerVerification& peer) {
                                 openssl_result = peer.openssl_result;
                                 return peer.chain.at(0).sha256_fingerprint == pin
                                            ? VerifyDecision::accept()
                                            : VerifyDecision::refuse("certificate not pinned");
                               })
                               .build();
    TlsPair pair(observing, server(test_pki().untrusted_cert, test_pki().untrusted_key));
    pair.pump();
    CHECK(openssl_result != X509_V_OK);
    CHECK(pair.client_ssl->handshake_future().is_success());
    CHECK(pair.server_ssl->handshake_future().is_success());
    CHECK(pair.client_ssl->native_handle() != nullptr);
    CHECK(SSL_get_verify_result(pair.client_ssl->native_handle()) == X509_V_OK);
  }
  SUBCASE("another certificate, although trusted, is refused") {
    TlsPair pair(client_ctx, server(test_pki().server_cert, test_pki().server_key));
    pair.pump();
    const SslHandshakeError e = failure(*pair.client_ssl);
    CHECK(std::string(e.what()).find("certificate not pinned") != std::string::npos);
    CHECK_FALSE(pair.server_ssl->handshake_future().is_success());
  }
  SUBCASE("without a callback, the untrusted certificate is refused by OpenSSL") {
    const auto plain = SslContextBuilder::for_client().trust_ca_file(test_pki().ca_cert).build();
    TlsPair pair(plain, server(test_pki().untrusted_cert, test_pki().untrusted_key));
    pair.pump();
    CHECK(failure(*pair.client_ssl).verify_result() != X509_V_OK);
  }
}

TEST_CASE("verify_callback: an exception refuses the peer") {
  const auto client_ctx = SslContextBuilder::for_client()
                              .trust_ca_file(test_pki().ca_cert)
                              .verify_callback([](const PeerVerification&) -> VerifyDecision {
                                throw std::runtime_error("policy store unreachable");
                              })
                              .build();
  TlsPair pair(client_ctx, server(test_pki().server_cert, test_pki().server_key));
  pair.pump();
  CHECK(std::string(failure(*pair.client_ssl).what()).find("policy store unreachable") !=
        std::string::npos);
}

TEST_CASE("verify_callback: a client without verify_peer still obeys its callback") {
  PeerVerification seen;
  const auto client_ctx = SslContextBuilder::for_client()
                              .verify_peer(false)
                              .verify_callback([&](const PeerVerification& peer) {
                                seen = peer;
                                return VerifyDecision::refuse("not this one");
                              })
                              .build();
  TlsPair pair(client_ctx, server(test_pki().server_cert, test_pki().server_key));
  pair.pump();
  REQUIRE_FALSE(seen.chain.empty());
  CHECK(seen.chain[0].subject == "CN=localhost");
  CHECK(std::string(failure(*pair.client_ssl).what()).find("not this one") != std::string::npos);
}
