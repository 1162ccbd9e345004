// Turns OpenSSL certificates into PeerCertificate values.
#pragma once

#include <vector>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <trellis/ssl/peer_certificate.hpp>

namespace trellis::ssl::detail {

// One certificate as a value (throws SslError when OpenSSL cannot encode it).
PeerCertificate to_peer_certificate(X509* cert);

// leaf, then the other certificates of chain (which may or may not start with leaf), as values.
std::vector<PeerCertificate> to_peer_chain(X509* leaf, STACK_OF(X509) * chain);

}  // namespace trellis::ssl::detail
