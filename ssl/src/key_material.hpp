// Loads a context's certificate chain and private key (PEM files, PEM text, a PKCS#12 file,
// encrypted keys with a password) and trusted CAs from PEM text. Failures throw SslError naming
// the source and the problem (a wrong or missing password says so).
#pragma once

#include <string>

#include <openssl/ssl.h>

namespace trellis::ssl::detail {

// The chain (leaf first) and key of PEM files; password decrypts an encrypted key.
void use_pem_files(SSL_CTX* ctx, const std::string& cert_chain_file, const std::string& key_file,
                   const std::string& password);
// The same from PEM text.
void use_pem_text(SSL_CTX* ctx, const std::string& cert_chain_pem, const std::string& key_pem,
                  const std::string& password);
// The certificate, key and chain (the file's other certificates) of a PKCS#12 file.
void use_pkcs12_file(SSL_CTX* ctx, const std::string& file, const std::string& password);
// When the certificate came without its chain, completes the chain once from the context's
// trusted store (what OpenSSL would otherwise do at every handshake, an X509_verify_cert per
// connection, unless SSL_MODE_NO_AUTO_CHAIN is set); certificates not found are left out.
void complete_chain_once(SSL_CTX* ctx);
// Adds every certificate of the PEM text to the trusted store (at least one, or SslError).
void trust_pem_text(SSL_CTX* ctx, const std::string& pem);
// Adds the subject names of the PEM text's certificates to the CertificateRequest's CA list.
void add_client_ca_names_pem(SSL_CTX* ctx, const std::string& pem);

}  // namespace trellis::ssl::detail
