#include "key_material.hpp"

#include <algorithm>
#include <cstring>
#include <functional>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>

#include <trellis/ssl/ssl_error.hpp>

#include "openssl_errors.hpp"

namespace trellis::ssl::detail {

namespace {

[[noreturn]] void fail(const std::string& what) { throw SslError(openssl_error_text(what)); }

// Frees a BIO when it leaves scope.
struct BioGuard {
  BIO* bio;
  ~BioGuard() { BIO_free(bio); }
};

BIO* memory_bio(const std::string& text) {
  BIO* bio = BIO_new_mem_buf(text.data(), static_cast<int>(text.size()));
  if (bio == nullptr) fail("out of memory");
  return bio;
}

// Never prompts on the terminal (OpenSSL's default for an encrypted PEM without a callback).
int no_password(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) { return 0; }

struct PasswordRequest {
  const std::string* password;
  bool asked = false;
};

int give_password(char* buf, int size, int /*rwflag*/, void* u) {
  auto* request = static_cast<PasswordRequest*>(u);
  request->asked = true;
  const std::string& pw = *request->password;
  if (pw.empty() || size <= 0 || pw.size() > static_cast<std::size_t>(size)) return 0;
  std::memcpy(buf, pw.data(), pw.size());
  return static_cast<int>(pw.size());
}

// True when the last error is only the end of the PEM text (no further BEGIN line).
bool at_end_of_pem() {
  const unsigned long err = ERR_peek_last_error();
  return ERR_GET_LIB(err) == ERR_LIB_PEM && ERR_GET_REASON(err) == PEM_R_NO_START_LINE;
}

void use_key(SSL_CTX* ctx, BIO* bio, const std::string& password, const std::string& where) {
  PasswordRequest request{&password};
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, give_password, &request);
  if (key == nullptr) {
    if (request.asked && password.empty()) {
      fail("the private key " + where + " is encrypted: give its password with key_password");
    }
    if (request.asked) fail("cannot decrypt the private key " + where + ": wrong password");
    fail("cannot load the private key " + where);
  }
  const int ok = SSL_CTX_use_PrivateKey(ctx, key);
  EVP_PKEY_free(key);
  if (ok != 1) fail("cannot use the private key " + where);
}

// Every certificate of the PEM text, in order; false when there was an error other than the end.
bool for_each_cert(BIO* bio, const std::function<bool(X509*)>& take) {
  ERR_clear_error();
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, no_password, nullptr)) {
    if (!take(cert)) return false;  // take freed it
  }
  if (!at_end_of_pem()) return false;
  ERR_clear_error();
  return true;
}

}  // namespace

void use_pem_files(SSL_CTX* ctx, const std::string& cert_chain_file, const std::string& key_file,
                   const std::string& password) {
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_chain_file.c_str()) != 1) {
    fail("cannot load the certificate chain '" + cert_chain_file + "'");
  }
  BioGuard bio{BIO_new_file(key_file.c_str(), "r")};
  if (bio.bio == nullptr) fail("cannot load the private key '" + key_file + "'");
  use_key(ctx, bio.bio, password, "'" + key_file + "'");
}

void use_pem_text(SSL_CTX* ctx, const std::string& cert_chain_pem, const std::string& key_pem,
                  const std::string& password) {
  {
    BioGuard bio{memory_bio(cert_chain_pem)};
    X509* leaf = PEM_read_bio_X509_AUX(bio.bio, nullptr, no_password, nullptr);
    if (leaf == nullptr) fail("cannot load the certificate chain from PEM text: no certificate");
    const int ok = SSL_CTX_use_certificate(ctx, leaf);
    X509_free(leaf);
    if (ok != 1) fail("cannot use the certificate from PEM text");
    SSL_CTX_clear_chain_certs(ctx);
    const bool chain_ok = for_each_cert(bio.bio, [ctx](X509* cert) {
      if (SSL_CTX_add0_chain_cert(ctx, cert) == 1) return true;  // takes it
      X509_free(cert);
      return false;
    });
    if (!chain_ok) fail("cannot load the certificate chain from PEM text");
  }
  BioGuard bio{memory_bio(key_pem)};
  use_key(ctx, bio.bio, password, "from PEM text");
}

void use_pkcs12_file(SSL_CTX* ctx, const std::string& file, const std::string& password) {
  PKCS12* p12 = nullptr;
  {
    BioGuard bio{BIO_new_file(file.c_str(), "rb")};
    if (bio.bio == nullptr) fail("cannot read the PKCS#12 file '" + file + "'");
    p12 = d2i_PKCS12_bio(bio.bio, nullptr);
  }
  if (p12 == nullptr) fail("'" + file + "' is not a PKCS#12 file");
  if (PKCS12_mac_present(p12) == 1 &&
      PKCS12_verify_mac(p12, password.c_str(), static_cast<int>(password.size())) != 1) {
    PKCS12_free(p12);
    ERR_clear_error();
    throw SslError("cannot open the PKCS#12 file '" + file + "': wrong password");
  }
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  STACK_OF(X509)* chain = nullptr;
  const int parsed = PKCS12_parse(p12, password.c_str(), &key, &cert, &chain);
  PKCS12_free(p12);
  auto release = [&] {
    EVP_PKEY_free(key);
    X509_free(cert);
    sk_X509_pop_free(chain, X509_free);
  };
  if (parsed != 1 || key == nullptr || cert == nullptr) {
    release();
    fail("cannot read the certificate and key of the PKCS#12 file '" + file + "'");
  }
  bool ok = SSL_CTX_use_certificate(ctx, cert) == 1 && SSL_CTX_use_PrivateKey(ctx, key) == 1 &&
            SSL_CTX_clear_chain_certs(ctx) == 1;
  for (int i = 0; ok && i < sk_X509_num(chain); ++i) {
    ok = SSL_CTX_add1_chain_cert(ctx, sk_X509_value(chain, i)) == 1;
  }
  release();
  if (!ok) fail("cannot use the certificate and key of the PKCS#12 file '" + file + "'");
}

void complete_chain_once(SSL_CTX* ctx) {
  if (SSL_CTX_get0_certificate(ctx) == nullptr) return;
  STACK_OF(X509)* chain = nullptr;
  if (SSL_CTX_get0_chain_certs(ctx, &chain) == 1 && chain != nullptr && sk_X509_num(chain) > 0) {
    return;  // given with the certificate
  }
  // As the per-handshake build: as much of the chain as the store has, errors ignored (a chain
  // that ends below a root the peer trusts is normal), the root included when found.
  ERR_set_mark();
  (void)SSL_CTX_build_cert_chain(ctx, SSL_BUILD_CHAIN_FLAG_IGNORE_ERROR);
  ERR_pop_to_mark();
}

void trust_pem_text(SSL_CTX* ctx, const std::string& pem) {
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int count = 0;
  BioGuard bio{memory_bio(pem)};
  const bool ok = for_each_cert(bio.bio, [store, &count](X509* cert) {
    const bool added = X509_STORE_add_cert(store, cert) == 1;  // takes its own reference
    X509_free(cert);
    count += added ? 1 : 0;
    return added;
  });
  if (!ok || count == 0) fail("no trusted CA certificate in the PEM text of trust_ca_pem");
}

void add_client_ca_names_pem(SSL_CTX* ctx, const std::string& pem) {
  BioGuard bio{memory_bio(pem)};
  const bool ok = for_each_cert(bio.bio, [ctx](X509* cert) {
    const bool added = SSL_CTX_add_client_CA(ctx, cert) == 1;  // copies the name
    X509_free(cert);
    return added;
  });
  if (!ok) fail("cannot read the names of the trusted CAs of trust_ca_pem");
}

}  // namespace trellis::ssl::detail
