// OCSP stapling: a server context given an OCSP response (checked at build()) staples it for
// clients that ask (status_request), also when SNI chose the context; a client context with
// request_ocsp_stapling(true) asks, and its handler hands over the stapled bytes.
#include <doctest/doctest.h>

#include <openssl/ocsp.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

SslContextBuilder stapling_server() {
  return SslContextBuilder::for_server(test_pki().server_chain, test_pki().server_key)
      .ocsp_response_file(test_pki().server_ocsp);
}

SslContextBuilder client_builder(TlsVersion max = TlsVersion::kTls13) {
  return SslContextBuilder::for_client().trust_ca_file(test_pki().ca_cert).max_version(max);
}

// The stapled response a client got from server_ctx, asking for one or not.
std::vector<unsigned char> handshake(const SslContext& client_ctx, const SslContext& server_ctx,
                                     const std::string& host = "localhost") {
  TlsPair pair(client_ctx, server_ctx, host);
  pair.pump();
  REQUIRE(pair.client_ssl->handshake_future().is_success());
  REQUIRE(pair.server_ssl->handshake_future().is_success());
  return pair.client_ssl->stapled_ocsp_response();
}

// What build() says when it refuses.
std::string refusal(const SslContextBuilder& builder) {
  try {
    builder.build();
  } catch (const SslError& e) {
    return e.what();
  }
  return "built";
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE(
    "OCSP stapling: the server staples its response when the client asks, in TLS 1.2 and 1.3") {
  const SslContext server = stapling_server().build();
  const std::vector<unsigned char> expected = read_bytes(test_pki().server_ocsp);
  for (TlsVersion v : {TlsVersion::kTls12, TlsVersion::kTls13}) {
    CAPTURE(static_cast<int>(v));
    const SslContext client = client_builder(v).request_ocsp_stapling(true).build();
    CHECK(handshake(client, server) == expected);
  }
}

TEST_CASE("OCSP stapling: the client sees the response, parsable and good, after the handshake") {
  const SslContext server = stapling_server().build();
  const SslContext client = client_builder().request_ocsp_stapling(true).build();
  TlsPair pair(client, server);
  CHECK(pair.client_ssl->stapled_ocsp_response().empty());  // not before the handshake
  pair.pump();
  REQUIRE(pair.client_ssl->handshake_future().is_success());
  const std::vector<unsigned char> der = pair.client_ssl->stapled_ocsp_response();
  const unsigned char* p = der.data();
  OCSP_RESPONSE* response = d2i_OCSP_RESPONSE(nullptr, &p, static_cast<long>(der.size()));
  REQUIRE(response != nullptr);
  CHECK(OCSP_response_status(response) == OCSP_RESPONSE_STATUS_SUCCESSFUL);
  OCSP_RESPONSE_free(response);
  // Still there once the channel closed.
  pair.client->close();
  pair.pump();
  CHECK(pair.client_ssl->stapled_ocsp_response() == der);
}

TEST_CASE("OCSP stapling: nothing is stapled for a client that does not ask (the default)") {
  const SslContext server = stapling_server().build();
  CHECK(handshake(client_builder().build(), server).empty());
  CHECK(handshake(client_builder().request_ocsp_stapling(false).build(), server).empty());
}

TEST_CASE("OCSP stapling: a server without a response staples nothing") {
  const SslContext server =
      SslContextBuilder::for_server(test_pki().server_chain, test_pki().server_key).build();
  for (TlsVersion v : {TlsVersion::kTls12, TlsVersion::kTls13}) {
    CAPTURE(static_cast<int>(v));
    CHECK(handshake(client_builder(v).request_ocsp_stapling(true).build(), server).empty());
  }
}

TEST_CASE("OCSP stapling: the response comes from the byte form too") {
  const std::vector<unsigned char> der = read_bytes(test_pki().server_ocsp);
  const SslContext server =
      SslContextBuilder::for_server(test_pki().server_chain, test_pki().server_key)
          .ocsp_response(der)
          .build();
  CHECK(handshake(client_builder().request_ocsp_stapling(true).build(), server) == der);
}

TEST_CASE("OCSP stapling: through SNI, the chosen context's response is stapled") {
  const SslContext alt = SslContextBuilder::for_server(test_pki().alt_chain, test_pki().alt_key)
                             .ocsp_response_file(test_pki().alt_ocsp)
                             .build();
  auto sni = [alt](std::string_view name) -> std::optional<SslContext> {
    if (name == "alt.example") return alt;
    return std::nullopt;
  };
  const std::vector<unsigned char> alt_der = read_bytes(test_pki().alt_ocsp);
  const std::vector<unsigned char> server_der = read_bytes(test_pki().server_ocsp);
  for (TlsVersion v : {TlsVersion::kTls12, TlsVersion::kTls13}) {
    CAPTURE(static_cast<int>(v));
    const SslContext client = client_builder(v).request_ocsp_stapling(true).build();
    SUBCASE("the default context staples too") {
      const SslContext server = stapling_server().sni(sni).build();
      CHECK(handshake(client, server, "alt.example") == alt_der);
      CHECK(handshake(client, server, "localhost") == server_der);
    }
    SUBCASE("the default context has no response") {
      const SslContext server =
          SslContextBuilder::for_server(test_pki().server_chain, test_pki().server_key)
              .sni(sni)
              .build();
      CHECK(handshake(client, server, "alt.example") == alt_der);
      CHECK(handshake(client, server, "localhost").empty());
    }
    SUBCASE("the chosen context has no response") {
      const SslContext plain_alt =
          SslContextBuilder::for_server(test_pki().alt_chain, test_pki().alt_key).build();
      const SslContext server =
          stapling_server()
              .sni([plain_alt](std::string_view name) -> std::optional<SslContext> {
                if (name == "alt.example") return plain_alt;
                return std::nullopt;
              })
              .build();
      CHECK(handshake(client, server, "alt.example").empty());
    }
  }
}

TEST_CASE("OCSP stapling: a resumed session staples nothing (no certificate is sent)") {
  const SslContext server = stapling_server().build();
  for (TlsVersion v : {TlsVersion::kTls12, TlsVersion::kTls13}) {
    CAPTURE(static_cast<int>(v));
    const SslContext client = client_builder(v).request_ocsp_stapling(true).build();
    {
      TlsPair first(client, server);
      first.pump();
      REQUIRE(first.client_ssl->handshake_future().is_success());
      CHECK_FALSE(first.client_ssl->stapled_ocsp_response().empty());
      first.client->close();  // close_notify: the session stays resumable
      first.pump();
    }
    TlsPair second(client, server);
    second.pump();
    REQUIRE(second.client_ssl->handshake_future().is_success());
    REQUIRE(second.client_ssl->is_session_reused());
    CHECK(second.client_ssl->stapled_ocsp_response().empty());
  }
}

TEST_CASE("OCSP stapling: build() refuses a response it cannot staple") {
  const auto& pki = test_pki();
  auto server = [&] { return SslContextBuilder::for_server(pki.server_chain, pki.server_key); };

  SUBCASE("garbage bytes") {
    const std::string why = refusal(server().ocsp_response({'n', 'o', 't', ' ', 'D', 'E', 'R'}));
    CHECK(contains(why, "not a DER OCSP response"));
  }
  SUBCASE("an empty response") {
    CHECK(contains(refusal(server().ocsp_response({})), "not a DER OCSP response"));
  }
  SUBCASE("a missing file") {
    const std::string why = refusal(server().ocsp_response_file(pki.dir + "/no-such.der"));
    CHECK(contains(why, "cannot read the OCSP response file"));
    CHECK(contains(why, "no-such.der"));
  }
  SUBCASE("a response for another certificate") {
    const std::string why = refusal(server().ocsp_response_file(pki.alt_ocsp));
    CHECK(contains(why, "no status for the server's certificate"));
  }
  SUBCASE("an expired response") {
    const std::string why = refusal(server().ocsp_response_file(pki.server_ocsp_expired));
    CHECK(contains(why, "expired"));
  }
  SUBCASE("a chain without the issuer") {
    const std::string why = refusal(SslContextBuilder::for_server(pki.server_cert, pki.server_key)
                                        .ocsp_response_file(pki.server_ocsp));
    CHECK(contains(why, "issuer"));
    CHECK(contains(why, "not in the certificate chain"));
  }
  SUBCASE("an unsuccessful response (tryLater)") {
    OCSP_RESPONSE* response = OCSP_response_create(OCSP_RESPONSE_STATUS_TRYLATER, nullptr);
    REQUIRE(response != nullptr);
    unsigned char* der = nullptr;
    const int n = i2d_OCSP_RESPONSE(response, &der);
    REQUIRE(n > 0);
    const std::vector<unsigned char> bytes(der, der + n);
    OPENSSL_free(der);
    OCSP_RESPONSE_free(response);
    CHECK(contains(refusal(server().ocsp_response(bytes)), "trylater"));
  }
  SUBCASE("a client context") {
    CHECK(contains(refusal(client_builder().ocsp_response_file(pki.server_ocsp)),
                   "for a server context"));
    CHECK(contains(refusal(server().request_ocsp_stapling(true)), "for a client context"));
  }
  SUBCASE("the last of ocsp_response and ocsp_response_file counts") {
    CHECK_NOTHROW(server().ocsp_response({1, 2, 3}).ocsp_response_file(pki.server_ocsp).build());
    CHECK(contains(refusal(server().ocsp_response_file(pki.server_ocsp).ocsp_response({1, 2, 3})),
                   "not a DER OCSP response"));
  }
}
