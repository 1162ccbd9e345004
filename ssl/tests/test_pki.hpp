// Test certificates made at test time with the OpenSSL API (no private key is committed): a CA,
// server certificates it signed (for localhost, for another name, an expired one, one
// expiring tomorrow), and a second,
// untrusted CA with a server certificate of its own; client certificates (for mutual TLS) from
// both CAs; the server's key encrypted with a password, PKCS#12 files (certificate, key and
// CA) of the server and of the client, and OCSP responses (DER, signed by the CA) for stapling.
// Files in a temporary directory.
#pragma once

#include <string>

namespace trellis::ssl::testing {

struct TestPki {
  std::string dir;
  std::string ca_cert;                        // the trusted CA
  std::string server_cert, server_key;        // localhost and 127.0.0.1, signed by ca_cert
  std::string alt_cert, alt_key;              // alt.example, signed by ca_cert
  std::string expired_cert, expired_key;      // localhost, expired yesterday
  std::string expiring_cert, expiring_key;    // localhost, expires tomorrow
  std::string untrusted_cert, untrusted_key;  // localhost, signed by another CA
  std::string client_cert, client_key;        // a client (CN client.example), signed by ca_cert
  std::string untrusted_client_cert, untrusted_client_key;  // a client, signed by another CA
  std::string server_key_encrypted;  // server_key as encrypted PKCS#8 PEM (key_password)
  std::string server_p12;            // server_cert, its key and ca_cert (p12_password)
  std::string client_p12;            // client_cert, its key and ca_cert (p12_password)
  std::string server_chain;          // server_cert then ca_cert (the issuer, for OCSP stapling)
  std::string alt_chain;             // alt_cert then ca_cert
  std::string server_ocsp;           // DER OCSPResponse: server_cert good, next update in a day
  std::string alt_ocsp;              // the same for alt_cert
  std::string server_ocsp_expired;   // server_cert good, but its next update was yesterday
  std::string server_ocsp_forged;    // server_cert good, signed by the other CA, not ca_cert
  std::string key_password = "key-secret";
  std::string p12_password = "p12-secret";
};

// Made once per process (P-256 keys: a few milliseconds).
const TestPki& test_pki();

}  // namespace trellis::ssl::testing
