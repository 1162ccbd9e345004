// SslHandler::peer_certificates(): the chain the peer presented, leaf first, as PeerCertificate
// values, on a client (the server's chain) and on a server (a client certificate, mutual TLS).
#include <doctest/doctest.h>

#include <openssl/evp.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <trellis/ssl/peer_certificate.hpp>
#include <trellis/ssl/ssl_context_builder.hpp>
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
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The server's certificate followed by the CA's: a chain of two.
std::string server_chain_file() {
  const std::string path = test_pki().dir + "/server-chain.pem";
  std::ofstream(path, std::ios::binary)
      << slurp(test_pki().server_cert) << slurp(test_pki().ca_cert);
  return path;
}

std::string sha256_hex(const std::vector<std::byte>& der) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  REQUIRE(EVP_Digest(der.data(), der.size(), md, &n, EVP_sha256(), nullptr) == 1);
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", md[i]);
    hex += buf;
  }
  return hex;
}

}  // namespace

TEST_CASE("peer_certificates: the server's chain on the client, leaf first") {
  const std::string chain = server_chain_file();
  const auto server_ctx = SslContextBuilder::for_server(chain, test_pki().server_key).build();
  const auto client_ctx = SslContextBuilder::for_client().trust_ca_file(test_pki().ca_cert).build();
  TlsPair pair(client_ctx, server_ctx);
  CHECK(pair.client_ssl->peer_certificates().empty());  // before the handshake
  pair.pump();
  REQUIRE(pair.client_ssl->is_handshake_done());

  const std::vector<PeerCertificate> certs = pair.client_ssl->peer_certificates();
  REQUIRE(certs.size() == 2);
  const PeerCertificate& leaf = certs[0];
  CHECK(leaf.subject == "CN=localhost");
  CHECK(leaf.issuer == "CN=trellis test CA");
  CHECK(leaf.subject_alt_names == std::vector<std::string>{"localhost", "127.0.0.1"});
  CHECK_FALSE(leaf.der.empty());
  CHECK(leaf.sha256_fingerprint.size() == 64);
  CHECK(leaf.sha256_fingerprint == sha256_hex(leaf.der));
  // make_cert: valid from a day ago to 30 days ahead.
  const auto now = std::chrono::system_clock::now();
  CHECK(leaf.not_before < now);
  CHECK(leaf.not_before > now - std::chrono::hours(49));
  CHECK(leaf.not_after > now + std::chrono::hours(24 * 29));
  CHECK(leaf.not_after < now + std::chrono::hours(24 * 31));

  CHECK(certs[1].subject == "CN=trellis test CA");
  CHECK(certs[1].issuer == "CN=trellis test CA");
  CHECK(certs[1].subject_alt_names.empty());
  CHECK(certs[1].sha256_fingerprint != leaf.sha256_fingerprint);
  // A server without client certificates sees none.
  CHECK(pair.server_ssl->peer_certificates().empty());
}

TEST_CASE("peer_certificates: the client's certificate on a mutual TLS server") {
  const auto server_ctx =
      SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key)
          .trust_ca_file(test_pki().ca_cert)
          .verify_peer(true)
          .build();
  const auto client_ctx = SslContextBuilder::for_client()
                              .trust_ca_file(test_pki().ca_cert)
                              .key_manager(test_pki().client_cert, test_pki().client_key)
                              .build();
  TlsPair pair(client_ctx, server_ctx);
  CHECK(pair.server_ssl->peer_certificates().empty());
  pair.pump();
  REQUIRE(pair.server_ssl->is_handshake_done());
  const auto certs = pair.server_ssl->peer_certificates();
  // OpenSSL completes the client's chain from its trusted CAs: the client sends the CA too.
  REQUIRE(certs.size() == 2);
  CHECK(certs[1].subject == "CN=trellis test CA");
  CHECK(certs[0].subject == "CN=client.example");
  CHECK(certs[0].issuer == "CN=trellis test CA");
  CHECK(certs[0].subject_alt_names == std::vector<std::string>{"client.example"});
  CHECK(certs[0].sha256_fingerprint == sha256_hex(certs[0].der));
  REQUIRE(pair.client_ssl->peer_certificates().size() >= 1);
  CHECK(pair.client_ssl->peer_certificates()[0].subject == "CN=localhost");

  // Still there once the connection is closed (for a log line in channel_inactive).
  pair.client->close();
  pair.pump();
  REQUIRE_FALSE(pair.server->is_open());
  REQUIRE(pair.server_ssl->peer_certificates().size() == 2);
  CHECK(pair.server_ssl->peer_certificates()[0].subject == "CN=client.example");
}

TEST_CASE("peer_certificates: nothing from a failed handshake") {
  const auto server_ctx =
      SslContextBuilder::for_server(test_pki().untrusted_cert, test_pki().untrusted_key).build();
  const auto client_ctx = SslContextBuilder::for_client().trust_ca_file(test_pki().ca_cert).build();
  TlsPair pair(client_ctx, server_ctx);
  pair.pump();
  REQUIRE_FALSE(pair.client_ssl->handshake_future().is_success());
  CHECK(pair.client_ssl->peer_certificates().empty());
}

TEST_CASE("a certificate given without its chain is sent with the chain its context's store has") {
  // The server's file holds the leaf alone; its store (trust_ca_pem, here for client
  // certificates) has the issuer. OpenSSL would look the chain up at every handshake; the
  // context completes it once when it is built, and sends that.
  const auto server_ctx =
      SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key)
          .trust_ca_pem(slurp(test_pki().ca_cert))
          .build();
  const auto client_ctx = SslContextBuilder::for_client().trust_ca_file(test_pki().ca_cert).build();
  for (int connection = 0; connection < 2; ++connection) {
    TlsPair pair(client_ctx, server_ctx);
    pair.pump();
    REQUIRE(pair.client_ssl->is_handshake_done());
    const std::vector<PeerCertificate> certs = pair.client_ssl->peer_certificates();
    REQUIRE(certs.size() == 2);
    CHECK(certs[0].subject == "CN=localhost");
    CHECK(certs[1].subject == "CN=trellis test CA");
  }
  // Without the issuer in the store, the leaf goes alone.
  const auto bare_ctx =
      SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key).build();
  TlsPair bare(client_ctx, bare_ctx);
  bare.pump();
  REQUIRE(bare.client_ssl->is_handshake_done());
  CHECK(bare.client_ssl->peer_certificates().size() == 1);
}
