#include "ocsp_stapling.hpp"

#include <trellis/ssl/ssl_error.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "openssl_errors.hpp"
#include "ssl_context_state.hpp"

namespace trellis::ssl::detail {

namespace {

struct Free {
  void operator()(OCSP_RESPONSE* p) const { OCSP_RESPONSE_free(p); }
  void operator()(OCSP_BASICRESP* p) const { OCSP_BASICRESP_free(p); }
  void operator()(OCSP_CERTID* p) const { OCSP_CERTID_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
};
template <typename T>
using Owned = std::unique_ptr<T, Free>;

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw SslError("cannot read the OCSP response file '" + path + "': " + std::strerror(errno));
  }
  std::vector<unsigned char> bytes{std::istreambuf_iterator<char>(in),
                                   std::istreambuf_iterator<char>()};
  if (in.bad()) throw SslError("cannot read the OCSP response file '" + path + "'");
  return bytes;
}

std::string name_text(const X509_NAME* name) {
  Owned<BIO> bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253) < 0) return "?";
  char* p = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &p);
  return std::string(p, static_cast<std::size_t>(n));
}

std::string time_text(const ASN1_TIME* t) {
  Owned<BIO> bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || ASN1_TIME_print(bio.get(), t) != 1) return "?";
  char* p = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &p);
  return std::string(p, static_cast<std::size_t>(n));
}

// The certificate of the chain that issued leaf.
X509* find_issuer(SSL_CTX* ctx, X509* leaf) {
  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(ctx, &chain);
  for (int i = 0; chain != nullptr && i < sk_X509_num(chain); ++i) {
    X509* candidate = sk_X509_value(chain, i);
    if (X509_check_issued(candidate, leaf) == X509_V_OK) return candidate;
  }
  return nullptr;
}

// Checks that der is a successful OCSP response with a current status for ctx's certificate.
void check_response(SSL_CTX* ctx, const std::vector<unsigned char>& der,
                    const std::string& source) {
  const std::string what = "the OCSP response " + source;
  const unsigned char* p = der.data();
  Owned<OCSP_RESPONSE> response(
      der.empty() ? nullptr : d2i_OCSP_RESPONSE(nullptr, &p, static_cast<long>(der.size())));
  if (response == nullptr || p != der.data() + der.size()) {
    throw SslError(openssl_error_text(what + " is not a DER OCSP response"));
  }
  const int status = OCSP_response_status(response.get());
  if (status != OCSP_RESPONSE_STATUS_SUCCESSFUL) {
    throw SslError(what + " is not successful: its status is " + OCSP_response_status_str(status));
  }
  Owned<OCSP_BASICRESP> basic(OCSP_response_get1_basic(response.get()));
  if (basic == nullptr) throw SslError(openssl_error_text(what + " has no basic response"));

  X509* leaf = SSL_CTX_get0_certificate(ctx);
  if (leaf == nullptr) throw SslError("OCSP stapling needs the server's certificate");
  X509* issuer = find_issuer(ctx, leaf);
  if (issuer == nullptr) {
    throw SslError("the issuer of the server's certificate (" +
                   name_text(X509_get_issuer_name(leaf)) +
                   ") is not in the certificate chain: OCSP stapling needs it there, after the "
                   "server's certificate, to find the certificate's status in " +
                   what);
  }
  Owned<OCSP_CERTID> id(OCSP_cert_to_id(nullptr, leaf, issuer));
  if (id == nullptr) throw SslError(openssl_error_text("cannot make the OCSP certificate id"));
  int cert_status = 0;
  int reason = 0;
  ASN1_GENERALIZEDTIME* revoked_at = nullptr;
  ASN1_GENERALIZEDTIME* this_update = nullptr;
  ASN1_GENERALIZEDTIME* next_update = nullptr;
  if (OCSP_resp_find_status(basic.get(), id.get(), &cert_status, &reason, &revoked_at, &this_update,
                            &next_update) != 1) {
    ERR_clear_error();
    throw SslError(what + " has no status for the server's certificate (" +
                   name_text(X509_get_subject_name(leaf)) + ")");
  }
  if (next_update != nullptr && X509_cmp_current_time(next_update) <= 0) {
    ERR_clear_error();
    throw SslError(what + " expired: its next update was " + time_text(next_update));
  }
}

// Server: staples the response for a client that sent status_request. OpenSSL calls the status
// callback of the SSL's current context, so after SNI chose another context (SSL_set_SSL_CTX),
// that context's callback and argument: its own response.
int staple(SSL* ssl, void* arg) {
  const auto* state = static_cast<const SslContextState*>(arg);
  if (state == nullptr || state->ocsp_response.empty()) return SSL_TLSEXT_ERR_NOACK;
  const std::size_t n = state->ocsp_response.size();
  // OpenSSL takes the copy and frees it with the SSL.
  auto* copy = static_cast<unsigned char*>(OPENSSL_malloc(n));
  if (copy == nullptr) return SSL_TLSEXT_ERR_NOACK;
  std::memcpy(copy, state->ocsp_response.data(), n);
  if (SSL_set_tlsext_status_ocsp_resp(ssl, copy, static_cast<long>(n)) != 1) {
    OPENSSL_free(copy);
    return SSL_TLSEXT_ERR_NOACK;
  }
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

void configure_ocsp(SSL_CTX* ctx, SslContextState& state, bool server, const std::string& der_file,
                    const std::optional<std::vector<unsigned char>>& der, bool request) {
  const bool has_response = !der_file.empty() || der.has_value();
  if (!server) {
    if (has_response) {
      throw SslError("ocsp_response and ocsp_response_file are for a server context");
    }
    if (request && SSL_CTX_set_tlsext_status_type(ctx, TLSEXT_STATUSTYPE_ocsp) != 1) {
      throw SslError(openssl_error_text("cannot request OCSP stapling"));
    }
    return;
  }
  if (request) throw SslError("request_ocsp_stapling is for a client context");
  if (!has_response) return;  // no callback: never staples
  std::vector<unsigned char> bytes = der_file.empty() ? *der : read_file(der_file);
  check_response(ctx, bytes, der_file.empty() ? "(given as bytes)" : "'" + der_file + "'");
  state.ocsp_response = std::move(bytes);
  if (SSL_CTX_set_tlsext_status_cb(ctx, staple) != 1 ||
      SSL_CTX_set_tlsext_status_arg(ctx, &state) != 1) {
    throw SslError(openssl_error_text("cannot set the OCSP status callback"));
  }
}

std::vector<unsigned char> stapled_ocsp_response(const SSL* ssl) {
  unsigned char* p = nullptr;
  const long n = SSL_get_tlsext_status_ocsp_resp(const_cast<SSL*>(ssl), &p);
  if (p == nullptr || n <= 0) return {};
  return {p, p + n};
}

}  // namespace trellis::ssl::detail
