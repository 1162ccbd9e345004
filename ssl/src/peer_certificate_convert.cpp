#include "peer_certificate_convert.hpp"

#include <arpa/inet.h>

#include <cstdio>
#include <ctime>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>

#include <trellis/ssl/ssl_error.hpp>

#include "openssl_errors.hpp"

namespace trellis::ssl::detail {

namespace {

std::string name_text(const X509_NAME* name) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) throw SslError(openssl_error_text("out of memory"));
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string text(data, static_cast<std::size_t>(n > 0 ? n : 0));
  BIO_free(bio);
  return text;
}

std::string ip_text(const ASN1_OCTET_STRING* ip) {
  char buf[INET6_ADDRSTRLEN] = {};
  const unsigned char* p = ASN1_STRING_get0_data(ip);
  const int n = ASN1_STRING_length(ip);
  if (n == 4 && inet_ntop(AF_INET, p, buf, sizeof buf) != nullptr) return buf;
  if (n == 16 && inet_ntop(AF_INET6, p, buf, sizeof buf) != nullptr) return buf;
  return {};
}

std::vector<std::string> alt_names(X509* cert) {
  std::vector<std::string> names;
  auto* gens =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (gens == nullptr) return names;
  for (int i = 0; i < sk_GENERAL_NAME_num(gens); ++i) {
    const GENERAL_NAME* gen = sk_GENERAL_NAME_value(gens, i);
    if (gen->type == GEN_DNS) {
      const ASN1_IA5STRING* s = gen->d.dNSName;
      names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                         static_cast<std::size_t>(ASN1_STRING_length(s)));
    } else if (gen->type == GEN_IPADD) {
      std::string text = ip_text(gen->d.iPAddress);
      if (!text.empty()) names.push_back(std::move(text));
    }
  }
  GENERAL_NAMES_free(gens);
  return names;
}

std::chrono::system_clock::time_point time_point(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return {};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace

PeerCertificate to_peer_certificate(X509* cert) {
  PeerCertificate pc;
  unsigned char* der = nullptr;
  const int der_len = i2d_X509(cert, &der);
  if (der_len <= 0) throw SslError(openssl_error_text("cannot encode the peer's certificate"));
  pc.der.assign(reinterpret_cast<const std::byte*>(der),
                reinterpret_cast<const std::byte*>(der) + der_len);
  OPENSSL_free(der);
  pc.subject = name_text(X509_get_subject_name(cert));
  pc.issuer = name_text(X509_get_issuer_name(cert));
  pc.subject_alt_names = alt_names(cert);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  if (X509_digest(cert, EVP_sha256(), md, &md_len) != 1) {
    throw SslError(openssl_error_text("cannot hash the peer's certificate"));
  }
  static constexpr char kHex[] = "0123456789abcdef";
  pc.sha256_fingerprint.reserve(md_len * 2);
  for (unsigned int i = 0; i < md_len; ++i) {
    pc.sha256_fingerprint += kHex[md[i] >> 4];
    pc.sha256_fingerprint += kHex[md[i] & 0xf];
  }
  pc.not_before = time_point(X509_get0_notBefore(cert));
  pc.not_after = time_point(X509_get0_notAfter(cert));
  return pc;
}

std::vector<PeerCertificate> to_peer_chain(X509* leaf, STACK_OF(X509) * chain) {
  std::vector<PeerCertificate> out;
  if (leaf == nullptr) return out;
  out.push_back(to_peer_certificate(leaf));
  for (int i = 0; chain != nullptr && i < sk_X509_num(chain); ++i) {
    X509* cert = sk_X509_value(chain, i);
    if (i == 0 && X509_cmp(cert, leaf) == 0) continue;  // a client's view starts with the leaf
    out.push_back(to_peer_certificate(cert));
  }
  return out;
}

}  // namespace trellis::ssl::detail
