// OCSP stapling (RFC 6066 8): a server context's OCSP response, checked when the context is built
// and stapled to the handshakes of clients that ask for it (status_request); a client context's
// request for it, and the response a client received.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <openssl/ssl.h>

namespace trellis::ssl::detail {

struct SslContextState;

// A server (server true) with a response, from der_file when it is not empty, else der: checks
// it against ctx's certificate (loaded already; its issuer must be in the chain), keeps it in
// state and installs the status callback that staples it. A client with request set asks for
// stapling in its ClientHello. Throws SslError saying why a response cannot be stapled, or when
// a setting belongs to the other side.
void configure_ocsp(SSL_CTX* ctx, SslContextState& state, bool server, const std::string& der_file,
                    const std::optional<std::vector<unsigned char>>& der, bool request);

// The DER OCSP response the server stapled on a client's ssl (empty when none).
std::vector<unsigned char> stapled_ocsp_response(const SSL* ssl);

}  // namespace trellis::ssl::detail
