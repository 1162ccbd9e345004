// Where certificates and keys come from: PEM text in memory (for_server_pem, key_manager_pem,
// trust_ca_pem), password-protected private keys (key_password, files and memory) and PKCS#12
// files (for_server_pkcs12, key_manager_pkcs12). A wrong or missing password is an SslError
// that says so.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
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

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

SslContext trusting_client() {
  return SslContextBuilder::for_client().trust_ca_file(test_pki().ca_cert).build();
}

// Builds with the builder and expects an SslError whose text has `needle`.
void check_build_fails(const SslContextBuilder& builder, const std::string& needle) {
  try {
    (void)builder.build();
    FAIL("build() succeeded");
  } catch (const SslError& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(needle) != std::string::npos);
  }
}

// The handshake of a pair succeeded on both sides; the client saw the localhost certificate.
void check_handshake(TlsPair& pair) {
  pair.pump();
  REQUIRE(pair.client_ssl->handshake_future().is_success());
  REQUIRE(pair.server_ssl->handshake_future().is_success());
  REQUIRE_FALSE(pair.client_ssl->peer_certificates().empty());
  CHECK(pair.client_ssl->peer_certificates()[0].subject == "CN=localhost");
}

}  // namespace

TEST_CASE("for_server_pem and trust_ca_pem: certificates and keys from memory") {
  const auto server =
      SslContextBuilder::for_server_pem(slurp(test_pki().server_cert), slurp(test_pki().server_key))
          .build();
  const auto client =
      SslContextBuilder::for_client().trust_ca_pem(slurp(test_pki().ca_cert)).build();
  TlsPair pair(client, server);
  check_handshake(pair);
  // The trusted CAs from memory are the only ones: another CA's certificate is refused.
  TlsPair untrusted(
      client,
      SslContextBuilder::for_server(test_pki().untrusted_cert, test_pki().untrusted_key).build());
  untrusted.pump();
  CHECK_FALSE(untrusted.client_ssl->handshake_future().is_success());
}

TEST_CASE("key_manager_pem: a client certificate from memory for mutual TLS") {
  const auto server = SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key)
                          .trust_ca_pem(slurp(test_pki().ca_cert))
                          .verify_peer(true)
                          .build();
  const auto client =
      SslContextBuilder::for_client()
          .trust_ca_file(test_pki().ca_cert)
          .key_manager_pem(slurp(test_pki().client_cert), slurp(test_pki().client_key))
          .build();
  TlsPair pair(client, server);
  check_handshake(pair);
  REQUIRE_FALSE(pair.server_ssl->peer_certificates().empty());
  CHECK(pair.server_ssl->peer_certificates()[0].subject == "CN=client.example");
}

TEST_CASE("PEM from memory: text without a certificate or key is an SslError") {
  check_build_fails(
      SslContextBuilder::for_server_pem("not a certificate", slurp(test_pki().server_key)),
      "certificate");
  check_build_fails(SslContextBuilder::for_server_pem(slurp(test_pki().server_cert), "no key"),
                    "private key");
  check_build_fails(SslContextBuilder::for_client().trust_ca_pem("nothing"), "trusted CA");
}

TEST_CASE("key_password: an encrypted private key, from a file and from memory") {
  SUBCASE("file") {
    const auto server =
        SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key_encrypted)
            .key_password(test_pki().key_password)
            .build();
    TlsPair pair(trusting_client(), server);
    check_handshake(pair);
  }
  SUBCASE("memory") {
    const auto server = SslContextBuilder::for_server_pem(slurp(test_pki().server_cert),
                                                          slurp(test_pki().server_key_encrypted))
                            .key_password(test_pki().key_password)
                            .build();
    TlsPair pair(trusting_client(), server);
    check_handshake(pair);
  }
  SUBCASE("a wrong password") {
    check_build_fails(
        SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key_encrypted)
            .key_password("not the password"),
        "wrong password");
    check_build_fails(SslContextBuilder::for_server_pem(slurp(test_pki().server_cert),
                                                        slurp(test_pki().server_key_encrypted))
                          .key_password("not the password"),
                      "wrong password");
  }
  SUBCASE("no password for an encrypted key") {
    check_build_fails(
        SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key_encrypted),
        "key_password");
  }
}

TEST_CASE("for_server_pkcs12: the certificate, key and chain of a PKCS#12 file") {
  const auto server =
      SslContextBuilder::for_server_pkcs12(test_pki().server_p12, test_pki().p12_password).build();
  TlsPair pair(trusting_client(), server);
  check_handshake(pair);
  // The CA in the file is sent as the chain.
  const auto chain = pair.client_ssl->peer_certificates();
  REQUIRE(chain.size() == 2);
  CHECK(chain[1].subject == "CN=trellis test CA");

  check_build_fails(SslContextBuilder::for_server_pkcs12(test_pki().server_p12, "wrong"),
                    "wrong password");
  check_build_fails(SslContextBuilder::for_server_pkcs12(test_pki().dir + "/missing.p12", "x"),
                    "missing.p12");
}

TEST_CASE("key_manager_pkcs12: a client certificate from a PKCS#12 file") {
  const auto server = SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key)
                          .trust_ca_file(test_pki().ca_cert)
                          .verify_peer(true)
                          .build();
  const auto client = SslContextBuilder::for_client()
                          .trust_ca_file(test_pki().ca_cert)
                          .key_manager_pkcs12(test_pki().client_p12, test_pki().p12_password)
                          .build();
  TlsPair pair(client, server);
  check_handshake(pair);
  REQUIRE_FALSE(pair.server_ssl->peer_certificates().empty());
  CHECK(pair.server_ssl->peer_certificates()[0].subject == "CN=client.example");
}
