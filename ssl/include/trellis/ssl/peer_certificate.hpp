// PeerCertificate: one certificate of the chain a TLS peer presented, as plain values (its DER
// bytes, subject and issuer text, subject alternative names, SHA-256 fingerprint, validity), for
// logging, authorization and pinning without touching OpenSSL.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace trellis::ssl {

/// One certificate the peer presented (see SslHandler::peer_certificates()).
struct PeerCertificate {
  /// The certificate as DER bytes (what the peer sent).
  std::vector<std::byte> der;
  /// The subject name, RFC 2253 text ("CN=localhost,O=Example").
  std::string subject;
  /// The issuer name, RFC 2253 text.
  std::string issuer;
  /// The subject alternative names: DNS names as written, IP addresses as text ("127.0.0.1",
  /// "::1"); other kinds are left out.
  std::vector<std::string> subject_alt_names;
  /// SHA-256 of der, 64 lowercase hex digits without separators.
  std::string sha256_fingerprint;
  /// The validity period (notBefore, notAfter).
  std::chrono::system_clock::time_point not_before;
  std::chrono::system_clock::time_point not_after;  ///< see not_before
};

}  // namespace trellis::ssl
