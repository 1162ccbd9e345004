#include "test_pki.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace trellis::ssl::testing {

namespace {

struct Issued {
  EVP_PKEY* key;
  X509* cert;
};

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test PKI: ") + what);
}

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX v3;
  X509V3_set_ctx(&v3, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, nid, value);
  check(ext != nullptr, "extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for cn valid from now + from_days to now + to_days, signed by issuer (itself when
// null).
Issued make_cert(const char* cn, const char* san, const Issued* issuer, long from_days,
                 long to_days, bool ca) {
  static long serial = 1;
  EVP_PKEY* key = EVP_EC_gen("P-256");
  check(key != nullptr, "key");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert), from_days * 86400);
  X509_gmtime_adj(X509_getm_notAfter(cert), to_days * 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509* issuer_cert = issuer ? issuer->cert : cert;
  X509_set_issuer_name(cert, X509_get_subject_name(issuer_cert));
  if (ca) {
    add_ext(cert, issuer_cert, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(cert, issuer_cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(cert, issuer_cert, NID_basic_constraints, "CA:FALSE");
    add_ext(cert, issuer_cert, NID_subject_alt_name, san);
    add_ext(cert, issuer_cert, NID_ext_key_usage, "serverAuth,clientAuth");
  }
  check(X509_sign(cert, issuer ? issuer->key : key, EVP_sha256()) > 0, "sign");
  return {key, cert};
}

void write_cert(const std::string& path, X509* cert) {
  FILE* f = std::fopen(path.c_str(), "w");
  check(f != nullptr, "open");
  PEM_write_X509(f, cert);
  std::fclose(f);
}

void write_key(const std::string& path, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  check(f != nullptr, "open");
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
}

void write_encrypted_key(const std::string& path, EVP_PKEY* key, const std::string& password) {
  FILE* f = std::fopen(path.c_str(), "w");
  check(f != nullptr, "open");
  const bool ok =
      PEM_write_PKCS8PrivateKey(f, key, EVP_aes_256_cbc(), password.data(),
                                static_cast<int>(password.size()), nullptr, nullptr) == 1;
  std::fclose(f);
  check(ok, "encrypted key");
}

void write_pkcs12(const std::string& path, const Issued& leaf, X509* ca,
                  const std::string& password) {
  STACK_OF(X509)* chain = sk_X509_new_null();
  check(chain != nullptr && sk_X509_push(chain, ca) > 0, "chain");
  PKCS12* p12 =
      PKCS12_create(password.c_str(), "trellis test", leaf.key, leaf.cert, chain, 0, 0, 0, 0, 0);
  sk_X509_free(chain);  // not the certificates
  check(p12 != nullptr, "PKCS12_create");
  FILE* f = std::fopen(path.c_str(), "wb");
  const bool ok = f != nullptr && i2d_PKCS12_fp(f, p12) == 1;
  if (f != nullptr) std::fclose(f);
  PKCS12_free(p12);
  check(ok, "write PKCS#12");
}

// A successful OCSP response saying that leaf (issued by ca) is good, signed by signer (ca when
// null), with thisUpdate and nextUpdate at now + the given days (DER, as `openssl ocsp -respout`
// writes it).
void write_ocsp_response(const std::string& path, const Issued& leaf, const Issued& ca,
                         long this_update_days, long next_update_days,
                         const Issued* signer = nullptr) {
  if (signer == nullptr) signer = &ca;
  OCSP_BASICRESP* basic = OCSP_BASICRESP_new();
  OCSP_CERTID* id = OCSP_cert_to_id(nullptr, leaf.cert, ca.cert);
  ASN1_TIME* this_update = X509_gmtime_adj(nullptr, this_update_days * 86400);
  ASN1_TIME* next_update = X509_gmtime_adj(nullptr, next_update_days * 86400);
  check(basic != nullptr && id != nullptr && this_update != nullptr && next_update != nullptr,
        "OCSP response");
  check(OCSP_basic_add1_status(basic, id, V_OCSP_CERTSTATUS_GOOD, 0, nullptr, this_update,
                               next_update) != nullptr,
        "OCSP_basic_add1_status");
  check(OCSP_basic_sign(basic, signer->cert, signer->key, EVP_sha256(), nullptr, 0) == 1,
        "OCSP_basic_sign");
  OCSP_RESPONSE* response = OCSP_response_create(OCSP_RESPONSE_STATUS_SUCCESSFUL, basic);
  check(response != nullptr, "OCSP_response_create");
  unsigned char* der = nullptr;
  const int n = i2d_OCSP_RESPONSE(response, &der);
  FILE* f = std::fopen(path.c_str(), "wb");
  const bool ok = n > 0 && f != nullptr &&
                  std::fwrite(der, 1, static_cast<std::size_t>(n), f) == std::size_t(n);
  if (f != nullptr) std::fclose(f);
  OPENSSL_free(der);
  OCSP_RESPONSE_free(response);
  ASN1_TIME_free(next_update);
  ASN1_TIME_free(this_update);
  OCSP_CERTID_free(id);
  OCSP_BASICRESP_free(basic);
  check(ok, "write OCSP response");
}

void write_chain(const std::string& path, X509* leaf, X509* issuer) {
  FILE* f = std::fopen(path.c_str(), "w");
  check(f != nullptr, "open");
  const bool ok = PEM_write_X509(f, leaf) == 1 && PEM_write_X509(f, issuer) == 1;
  std::fclose(f);
  check(ok, "write chain");
}

TestPki make_pki() {
  TestPki pki;
  char tmpl[] = "/tmp/trellis-ssl-test-XXXXXX";
  check(mkdtemp(tmpl) != nullptr, "mkdtemp");
  pki.dir = tmpl;
  const Issued ca = make_cert("trellis test CA", nullptr, nullptr, -1, 30, true);
  const Issued other_ca = make_cert("untrusted test CA", nullptr, nullptr, -1, 30, true);
  const Issued server = make_cert("localhost", "DNS:localhost,IP:127.0.0.1", &ca, -1, 30, false);
  const Issued alt = make_cert("alt.example", "DNS:alt.example", &ca, -1, 30, false);
  const Issued expired = make_cert("localhost", "DNS:localhost,IP:127.0.0.1", &ca, -10, -1, false);
  const Issued expiring = make_cert("localhost", "DNS:localhost,IP:127.0.0.1", &ca, -1, 1, false);
  const Issued untrusted =
      make_cert("localhost", "DNS:localhost,IP:127.0.0.1", &other_ca, -1, 30, false);
  const Issued client = make_cert("client.example", "DNS:client.example", &ca, -1, 30, false);
  const Issued untrusted_client =
      make_cert("client.example", "DNS:client.example", &other_ca, -1, 30, false);
  auto file = [&](const char* name) { return pki.dir + "/" + name; };
  pki.ca_cert = file("ca.pem");
  write_cert(pki.ca_cert, ca.cert);
  auto pair = [&](const Issued& i, const char* stem, std::string& cert, std::string& key) {
    cert = file((std::string(stem) + ".pem").c_str());
    key = file((std::string(stem) + ".key").c_str());
    write_cert(cert, i.cert);
    write_key(key, i.key);
  };
  pair(server, "server", pki.server_cert, pki.server_key);
  pair(alt, "alt", pki.alt_cert, pki.alt_key);
  pair(expired, "expired", pki.expired_cert, pki.expired_key);
  pair(expiring, "expiring", pki.expiring_cert, pki.expiring_key);
  pair(untrusted, "untrusted", pki.untrusted_cert, pki.untrusted_key);
  pair(client, "client", pki.client_cert, pki.client_key);
  pair(untrusted_client, "untrusted-client", pki.untrusted_client_cert, pki.untrusted_client_key);
  pki.server_key_encrypted = file("server-encrypted.key");
  write_encrypted_key(pki.server_key_encrypted, server.key, pki.key_password);
  pki.server_p12 = file("server.p12");
  write_pkcs12(pki.server_p12, server, ca.cert, pki.p12_password);
  pki.client_p12 = file("client.p12");
  write_pkcs12(pki.client_p12, client, ca.cert, pki.p12_password);
  pki.server_chain = file("server-chain.pem");
  write_chain(pki.server_chain, server.cert, ca.cert);
  pki.alt_chain = file("alt-chain.pem");
  write_chain(pki.alt_chain, alt.cert, ca.cert);
  pki.server_ocsp = file("server-ocsp.der");
  write_ocsp_response(pki.server_ocsp, server, ca, 0, 1);
  pki.alt_ocsp = file("alt-ocsp.der");
  write_ocsp_response(pki.alt_ocsp, alt, ca, 0, 1);
  pki.server_ocsp_expired = file("server-ocsp-expired.der");
  write_ocsp_response(pki.server_ocsp_expired, server, ca, -2, -1);
  pki.server_ocsp_forged = file("server-ocsp-forged.der");
  write_ocsp_response(pki.server_ocsp_forged, server, ca, 0, 1, &other_ca);
  for (const Issued& i :
       {ca, other_ca, server, alt, expired, expiring, untrusted, client, untrusted_client}) {
    X509_free(i.cert);
    EVP_PKEY_free(i.key);
  }
  return pki;
}

struct PkiHolder {
  TestPki pki = make_pki();
  ~PkiHolder() {
    for (const std::string* f : {&pki.ca_cert,
                                 &pki.server_cert,
                                 &pki.server_key,
                                 &pki.alt_cert,
                                 &pki.alt_key,
                                 &pki.expired_cert,
                                 &pki.expired_key,
                                 &pki.expiring_cert,
                                 &pki.expiring_key,
                                 &pki.untrusted_cert,
                                 &pki.untrusted_key,
                                 &pki.client_cert,
                                 &pki.client_key,
                                 &pki.untrusted_client_cert,
                                 &pki.untrusted_client_key,
                                 &pki.server_key_encrypted,
                                 &pki.server_p12,
                                 &pki.client_p12,
                                 &pki.server_chain,
                                 &pki.alt_chain,
                                 &pki.server_ocsp,
                                 &pki.alt_ocsp,
                                 &pki.server_ocsp_expired,
                                 &pki.server_ocsp_forged}) {
      std::remove(f->c_str());
    }
    std::remove(pki.dir.c_str());
  }
};

}  // namespace

const TestPki& test_pki() {
  static const PkiHolder holder;
  return holder.pki;
}

}  // namespace trellis::ssl::testing
