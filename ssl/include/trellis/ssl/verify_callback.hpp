// VerifyCallback: the application's check of the peer's certificate chain, run after OpenSSL's
// own verification (SslContextBuilder::verify_callback), and the decision it returns.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <trellis/ssl/peer_certificate.hpp>

namespace trellis::ssl {

/// What a verify callback is given: the peer's chain and what OpenSSL made of it.
struct PeerVerification {
  /// The chain the peer presented, leaf first.
  std::vector<PeerCertificate> chain;
  /// OpenSSL's verdict on the chain (trust, validity, and on a client the hostname): an X509_V_*
  /// code, X509_V_OK (0) when OpenSSL accepted it.
  long openssl_result = 0;
  /// X509_verify_cert_error_string of openssl_result ("ok", "certificate has expired", ...).
  std::string openssl_result_text;
  /// True when OpenSSL accepted the chain.
  bool openssl_accepted() const noexcept { return openssl_result == 0; }
};

/// A verify callback's decision: accept the peer, or refuse it with a reason that the failed
/// handshake's SslHandshakeError carries.
class VerifyDecision {
 public:
  /// The peer is accepted.
  static VerifyDecision accept() { return VerifyDecision(true, {}); }
  /// The peer is refused, for `reason` (shown in SslHandshakeError::what()).
  static VerifyDecision refuse(std::string reason) {
    return VerifyDecision(false, std::move(reason));
  }
  /// True for accept().
  bool accepted() const noexcept { return accepted_; }
  /// The reason given to refuse() (empty for accept()).
  const std::string& reason() const noexcept { return reason_; }

 private:
  VerifyDecision(bool accepted, std::string reason)
      : accepted_(accepted), reason_(std::move(reason)) {}
  bool accepted_;
  std::string reason_;
};

/// The application's check of the peer, run once per handshake after OpenSSL verified the
/// chain, on the connection's event loop. Its decision is final: it may accept a chain OpenSSL
/// refused (pinning a certificate no trusted CA signed), so a callback that means to add to
/// OpenSSL's checks refuses when !openssl_accepted(). One context serves connections on several
/// loops at once: the callback must be safe to call concurrently. An exception refuses the peer.
using VerifyCallback = std::function<VerifyDecision(const PeerVerification& peer)>;

}  // namespace trellis::ssl
