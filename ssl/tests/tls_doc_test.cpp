// The code blocks of docs/tls.md, compiled here and run on embedded channels (the ctest
// docs.tls_snippets checks that every block of the page is in this file).
#include <doctest/doctest.h>

#include <openssl/ocsp.h>
#include <openssl/ssl.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <trellis/http.hpp>
#include <trellis/pipeline.hpp>
#include <trellis/ssl.hpp>
#include <trellis/testing.hpp>

#include "test_pki.hpp"
#include "tls_pair.hpp"

namespace {

// Echoes what it reads (the application behind the SslHandler).
class Echo final : public trellis::ChannelInboundHandler {
 public:
  void channel_read(trellis::ChannelHandlerContext& ctx, trellis::Message msg) override {
    ctx.write(std::move(msg));
  }
  void channel_read_complete(trellis::ChannelHandlerContext& ctx) override { ctx.flush(); }
};

// --- docs/tls.md ----------------------------------------------------------------------------
trellis::ssl::SslContext make_server_context(const std::string& cert, const std::string& key) {
  return trellis::ssl::SslContextBuilder::for_server(cert, key)  // PEM files, chain leaf first
      .alpn({"http/1.1"})
      .build();
}

trellis::ssl::SslContext make_client_context(const std::string& ca_file) {
  return trellis::ssl::SslContextBuilder::for_client()
      .trust_ca_file(ca_file)  // without it: the system's trusted CAs
      .alpn({"h2", "http/1.1"})
      .build();
}

trellis::ssl::SslContext make_mutual_server(const std::string& cert, const std::string& key,
                                            const std::string& client_ca) {
  return trellis::ssl::SslContextBuilder::for_server(cert, key)
      .trust_ca_file(client_ca)  // the CAs whose client certificates are accepted
      .verify_peer(true)         // a client without one is refused
      .build();
}

trellis::ssl::SslContext make_client_with_certificate(const std::string& ca_file,
                                                      const std::string& cert,
                                                      const std::string& key) {
  return trellis::ssl::SslContextBuilder::for_client()
      .trust_ca_file(ca_file)
      .key_manager(cert, key)  // PEM files, chain leaf first
      .build();
}

void init_tls_server_pipeline(trellis::Channel& ch, const trellis::ssl::SslContext& tls) {
  ch.pipeline().add_last("tls", std::make_shared<trellis::ssl::SslHandler>(tls));
  ch.pipeline().add_last("app", std::make_shared<Echo>());  // reads and writes plaintext
}

std::shared_ptr<trellis::ssl::SslHandler> add_tls_client(trellis::Channel& ch,
                                                         const trellis::ssl::SslContext& tls) {
  auto handler = std::make_shared<trellis::ssl::SslHandler>(tls, "localhost");
  ch.pipeline().add_first("tls", handler);
  handler->handshake_future().add_listener([handler](const trellis::Future<void>& f) {
    if (f.is_success()) {
      std::printf("%s, ALPN \"%s\", resumed: %d\n",
                  std::string(handler->protocol_version()).c_str(),
                  std::string(handler->alpn_protocol()).c_str(), handler->is_session_reused());
    }
  });
  return handler;
}

trellis::ssl::SslContext make_sni_server(const std::string& cert, const std::string& key,
                                         trellis::ssl::SslContext alt) {
  return trellis::ssl::SslContextBuilder::for_server(cert, key)  // the default name
      .sni([alt](std::string_view name) -> std::optional<trellis::ssl::SslContext> {
        if (name == "alt.example") return alt;
        return std::nullopt;  // keep the context the handler was made with
      })
      .build();
}

std::string describe_failure(const trellis::Future<void>& handshake) {
  try {
    std::rethrow_exception(handshake.cause());
  } catch (const trellis::ssl::SslHandshakeError& e) {
    // e.what(): OpenSSL's reasons; verify_result(): X509_V_ERR_... (0 when not a certificate
    // problem) and its text, e.g. "hostname mismatch" or "certificate has expired".
    return std::string(e.what()) + " / " + e.verify_result_text();
  } catch (const std::exception& e) {
    return e.what();  // the channel closed first, ...
  }
}

trellis::http::HttpClientOptions https_options(const std::string& ca_file) {
  trellis::http::HttpClientOptions options;
  options.tls = std::make_shared<const trellis::ssl::SslContext>(
      trellis::ssl::SslContextBuilder::for_client().trust_ca_file(ca_file).build());
  return options;  // HttpClient(group, options).get("https://...") now verifies against ca_file
}

// A server whose certificate and encrypted key come from a secret store, not from files.
trellis::ssl::SslContext make_server_from_secrets(const std::string& chain_pem,
                                                  const std::string& encrypted_key_pem,
                                                  const std::string& key_password,
                                                  const std::string& client_ca_pem) {
  return trellis::ssl::SslContextBuilder::for_server_pem(chain_pem, encrypted_key_pem)
      .key_password(key_password)   // also for an encrypted key file given to for_server
      .trust_ca_pem(client_ca_pem)  // trusted CAs as PEM text
      .verify_peer(true)
      .build();
}

// A client presenting the certificate, key and chain of a PKCS#12 file.
trellis::ssl::SslContext make_client_from_pkcs12(const std::string& ca_file,
                                                 const std::string& p12_file,
                                                 const std::string& password) {
  return trellis::ssl::SslContextBuilder::for_client()
      .trust_ca_file(ca_file)
      .key_manager_pkcs12(p12_file, password)  // for_server_pkcs12 for a server
      .build();
}

// Accepts only the server certificate whose SHA-256 fingerprint is `pin`, whoever signed it.
trellis::ssl::SslContext make_pinning_client(std::string pin) {
  return trellis::ssl::SslContextBuilder::for_client()
      .verify_callback([pin](const trellis::ssl::PeerVerification& peer) {
        if (peer.chain.at(0).sha256_fingerprint == pin) {
          return trellis::ssl::VerifyDecision::accept();
        }
        return trellis::ssl::VerifyDecision::refuse("certificate not pinned");
      })
      .build();
}

// Who the client is, on a mutual TLS server (once handshake_future() succeeded).
std::string client_identity(const trellis::ssl::SslHandler& ssl) {
  const std::vector<trellis::ssl::PeerCertificate> chain = ssl.peer_certificates();
  if (chain.empty()) return "anonymous";
  return chain.front().subject + " (sha256 " + chain.front().sha256_fingerprint + ")";
}
// A server stapling the OCSP response fetched for its certificate; the chain file holds the
// certificate, then its issuer.
trellis::ssl::SslContext make_stapling_server(const std::string& chain, const std::string& key,
                                              const std::string& ocsp_der_file) {
  return trellis::ssl::SslContextBuilder::for_server(chain, key)
      .ocsp_response_file(ocsp_der_file)  // read and checked here: rebuild to refresh it
      .build();
}

trellis::ssl::SslContext make_ocsp_client(const std::string& ca_file) {
  return trellis::ssl::SslContextBuilder::for_client()
      .trust_ca_file(ca_file)
      .request_ocsp_stapling(true)  // the server staples its response, if it has one
      .build();
}

// After a full handshake: true when the server stapled a response signed for the issuer of its
// certificate, trusted by the client's context, current, that says the certificate is good.
bool stapled_status_is_good(const trellis::ssl::SslHandler& client) {
  const std::vector<unsigned char> der = client.stapled_ocsp_response();
  SSL* ssl = client.native_handle();
  STACK_OF(X509)* verified = SSL_get0_verified_chain(ssl);  // leaf, issuer, ..., trusted CA
  if (der.empty() || verified == nullptr || sk_X509_num(verified) < 2) return false;
  const unsigned char* p = der.data();
  OCSP_RESPONSE* response = d2i_OCSP_RESPONSE(nullptr, &p, static_cast<long>(der.size()));
  OCSP_BASICRESP* basic = response != nullptr ? OCSP_response_get1_basic(response) : nullptr;
  OCSP_CERTID* id =
      OCSP_cert_to_id(nullptr, sk_X509_value(verified, 0), sk_X509_value(verified, 1));
  int status = -1;
  int reason = 0;
  ASN1_GENERALIZEDTIME* revoked_at = nullptr;
  ASN1_GENERALIZEDTIME* this_update = nullptr;
  ASN1_GENERALIZEDTIME* next_update = nullptr;
  X509_STORE* trusted = SSL_CTX_get_cert_store(SSL_get_SSL_CTX(ssl));
  bool good = basic != nullptr && id != nullptr &&
              OCSP_basic_verify(basic, verified, trusted, 0) == 1;  // signed, by whom it should be
  good = good && OCSP_resp_find_status(basic, id, &status, &reason, &revoked_at, &this_update,
                                       &next_update) == 1;
  good = good && status == V_OCSP_CERTSTATUS_GOOD &&
         OCSP_check_validity(this_update, next_update, 300, -1) == 1;  // 5 minutes of skew
  OCSP_CERTID_free(id);
  OCSP_BASICRESP_free(basic);
  OCSP_RESPONSE_free(response);
  return good;
}
// --------------------------------------------------------------------------------------------

}  // namespace

using trellis::ssl::testing::test_pki;
using trellis::ssl::testing::TlsPair;

TEST_CASE("docs/tls.md: a server pipeline and a client handler talk over embedded channels") {
  const auto server_ctx = make_server_context(test_pki().server_cert, test_pki().server_key);
  const auto client_ctx = make_client_context(test_pki().ca_cert);
  auto server = trellis::EmbeddedChannel::create(trellis::EmbeddedChannel::Options{false});
  init_tls_server_pipeline(*server, server_ctx);
  server->register_channel();
  auto client = trellis::EmbeddedChannel::create(trellis::EmbeddedChannel::Options{false});
  auto handler = add_tls_client(*client, client_ctx);
  client->register_channel();
  for (int i = 0; i < 10; ++i) {
    while (auto m = client->read_outbound()) server->write_inbound(std::move(*m));
    while (auto m = server->read_outbound()) client->write_inbound(std::move(*m));
  }
  REQUIRE(handler->handshake_future().is_success());
  CHECK(handler->alpn_protocol() == "http/1.1");
  client->write_outbound(trellis::ByteBuf::from("echo me"));
  while (auto m = client->read_outbound()) server->write_inbound(std::move(*m));
  while (auto m = server->read_outbound()) client->write_inbound(std::move(*m));
  CHECK(TlsPair::read_all(*client) == "echo me");
}

trellis::ssl::SslContext make_resuming_server(const std::string& cert, const std::string& key) {
  return trellis::ssl::SslContextBuilder::for_server(cert, key)
      .session_timeout(std::chrono::hours(1))                 // how long a session resumes
      .session_ticket_key_rotation(std::chrono::minutes(30))  // a new ticket key every 30 min
      .session_cache_size(10000)  // for TLS 1.2 clients that take no tickets
      .build();
}

// On SIGHUP, or when a renewal tool wrote new files: new connections get the new certificate.
bool reload_certificate(trellis::ssl::SslContext& context, const std::string& cert,
                        const std::string& key) {
  try {
    context.reload(trellis::ssl::SslContextBuilder::for_server(cert, key).alpn({"http/1.1"}));
    return true;
  } catch (const trellis::ssl::SslError& e) {
    std::fprintf(stderr, "keeping the old certificate: %s\n", e.what());
    return false;
  }
}

TEST_CASE("docs/tls.md: session resumption and reloading a certificate") {
  auto server = make_resuming_server(test_pki().expiring_cert, test_pki().expiring_key);
  const auto client = make_client_context(test_pki().ca_cert);
  for (bool resumed : {false, true}) {
    TlsPair pair(client, server);
    pair.pump();
    REQUIRE(pair.server_ssl->handshake_future().is_success());
    CHECK(pair.server_ssl->is_session_reused() == resumed);
    pair.client->close();
    pair.pump();
  }
  CHECK(server.session_ticket_keys() == 1);
  const std::string old_leaf = [&] {
    TlsPair pair(client, server);
    pair.pump();
    return pair.client_ssl->peer_certificates().at(0).sha256_fingerprint;
  }();
  CHECK_FALSE(reload_certificate(server, test_pki().dir + "/missing.pem", test_pki().server_key));
  CHECK(reload_certificate(server, test_pki().server_cert, test_pki().server_key));
  TlsPair pair(client, server);
  pair.pump();
  REQUIRE(pair.client_ssl->handshake_future().is_success());
  CHECK(pair.client_ssl->peer_certificates().at(0).sha256_fingerprint != old_leaf);
}

TEST_CASE("docs/tls.md: SNI and the handshake failure text") {
  const auto plain = make_server_context(test_pki().server_cert, test_pki().server_key);
  const auto alt = make_server_context(test_pki().alt_cert, test_pki().alt_key);
  const auto sni = make_sni_server(test_pki().server_cert, test_pki().server_key, alt);
  TlsPair ok(make_client_context(test_pki().ca_cert), sni, "alt.example");
  ok.pump();
  CHECK(ok.client_ssl->handshake_future().is_success());

  TlsPair wrong(make_client_context(test_pki().ca_cert), plain, "wrong.example");
  wrong.pump();
  CHECK(describe_failure(wrong.client_ssl->handshake_future()).find("hostname mismatch") !=
        std::string::npos);
  CHECK(https_options(test_pki().ca_cert).tls != nullptr);
}

std::string file_text(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string text;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

TEST_CASE("docs/tls.md: keys from memory, passwords and PKCS#12") {
  const auto server = make_server_from_secrets(
      file_text(test_pki().server_cert), file_text(test_pki().server_key_encrypted),
      test_pki().key_password, file_text(test_pki().ca_cert));
  TlsPair pair(
      make_client_from_pkcs12(test_pki().ca_cert, test_pki().client_p12, test_pki().p12_password),
      server);
  pair.pump();
  REQUIRE(pair.server_ssl->handshake_future().is_success());
  CHECK(client_identity(*pair.server_ssl).rfind("CN=client.example", 0) == 0);
}

TEST_CASE("docs/tls.md: pinning a certificate") {
  const auto server = make_server_context(test_pki().untrusted_cert, test_pki().untrusted_key);
  // The pin, as a first connection that trusted the certificate would have recorded it.
  TlsPair first(trellis::ssl::SslContextBuilder::for_client()
                    .verify_callback([](const trellis::ssl::PeerVerification&) {
                      return trellis::ssl::VerifyDecision::accept();
                    })
                    .build(),
                server);
  first.pump();
  REQUIRE(first.client_ssl->handshake_future().is_success());
  const std::string pin = first.client_ssl->peer_certificates().at(0).sha256_fingerprint;

  TlsPair pinned(make_pinning_client(pin), server);
  pinned.pump();
  CHECK(pinned.client_ssl->handshake_future().is_success());
  TlsPair other(make_pinning_client(pin),
                make_server_context(test_pki().server_cert, test_pki().server_key));
  other.pump();
  CHECK(describe_failure(other.client_ssl->handshake_future()).find("certificate not pinned") !=
        std::string::npos);
}

TEST_CASE("docs/tls.md: mutual TLS") {
  const auto server =
      make_mutual_server(test_pki().server_cert, test_pki().server_key, test_pki().ca_cert);
  TlsPair with(make_client_with_certificate(test_pki().ca_cert, test_pki().client_cert,
                                            test_pki().client_key),
               server);
  with.pump();
  CHECK(with.server_ssl->handshake_future().is_success());
  CHECK(client_identity(*with.server_ssl).rfind("CN=client.example (sha256 ", 0) == 0);
  CHECK(client_identity(*with.client_ssl).rfind("CN=localhost (sha256 ", 0) == 0);
  TlsPair without(make_client_context(test_pki().ca_cert), server);
  without.pump();
  CHECK_FALSE(without.server_ssl->handshake_future().is_success());
}

TEST_CASE("docs/tls.md: OCSP stapling") {
  const auto stapling =
      make_stapling_server(test_pki().server_chain, test_pki().server_key, test_pki().server_ocsp);
  TlsPair stapled(make_ocsp_client(test_pki().ca_cert), stapling);
  stapled.pump();
  REQUIRE(stapled.client_ssl->handshake_future().is_success());
  CHECK(stapled_status_is_good(*stapled.client_ssl));

  // A response signed by a CA the client does not trust: stapled (the server does not check
  // signatures), refused by the check.
  TlsPair forged(make_ocsp_client(test_pki().ca_cert),
                 make_stapling_server(test_pki().server_chain, test_pki().server_key,
                                      test_pki().server_ocsp_forged));
  forged.pump();
  REQUIRE(forged.client_ssl->handshake_future().is_success());
  REQUIRE_FALSE(forged.client_ssl->stapled_ocsp_response().empty());
  CHECK_FALSE(stapled_status_is_good(*forged.client_ssl));

  // No response: the handshake succeeds, the check says no.
  TlsPair bare(make_ocsp_client(test_pki().ca_cert),
               make_server_context(test_pki().server_chain, test_pki().server_key));
  bare.pump();
  REQUIRE(bare.client_ssl->handshake_future().is_success());
  CHECK_FALSE(stapled_status_is_good(*bare.client_ssl));
}
