#include <doctest/doctest.h>

#include <string>

#include <trellis/ssl/ssl_context_builder.hpp>
#include <trellis/ssl/ssl_error.hpp>

#include "test_pki.hpp"

using namespace trellis::ssl;
using trellis::ssl::testing::test_pki;

TEST_CASE("a server context needs readable certificate and key files") {
  CHECK_THROWS_WITH_AS(
      SslContextBuilder::for_server("/nonexistent.pem", test_pki().server_key).build(),
      doctest::Contains("cannot load the certificate chain"), SslError);
  CHECK_THROWS_WITH_AS(
      SslContextBuilder::for_server(test_pki().server_cert, "/nonexistent.key").build(),
      doctest::Contains("cannot load the private key"), SslError);
}

TEST_CASE("a key that does not match the certificate is refused") {
  CHECK_THROWS_WITH_AS(
      SslContextBuilder::for_server(test_pki().server_cert, test_pki().alt_key).build(),
      doctest::Contains("key values mismatch"), SslError);
}

TEST_CASE("contexts know their side, and an SslError is a trellis::Error") {
  CHECK(SslContextBuilder::for_server(test_pki().server_cert, test_pki().server_key)
            .build()
            .is_server());
  CHECK_FALSE(SslContextBuilder::for_client().build().is_server());
  CHECK_THROWS_AS(SslContextBuilder::for_client().trust_ca_file("/nonexistent-ca.pem").build(),
                  trellis::Error);
  CHECK_THROWS_AS(SslContextBuilder::for_client().alpn({""}).build(), SslError);
}
