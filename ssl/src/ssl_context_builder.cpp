#include <trellis/ssl/ssl_context_builder.hpp>

#include <trellis/ssl/ssl_error.hpp>

#include <algorithm>
#include <string_view>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "key_material.hpp"
#include "ocsp_stapling.hpp"
#include "openssl_errors.hpp"
#include "peer_certificate_convert.hpp"
#include "ssl_context_state.hpp"

namespace trellis::ssl {

namespace detail {

int connection_data_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

namespace {

SslContextState* state_of(SSL_CTX* ctx) {
  return static_cast<SslContextState*>(SSL_CTX_get_app_data(ctx));
}

// Server: the first of our protocols (in our order) that the client offers.
int select_alpn(SSL* ssl, const unsigned char** out, unsigned char* out_len,
                const unsigned char* in, unsigned int in_len, void* /*arg*/) {
  const SslContextState* state = state_of(SSL_get_SSL_CTX(ssl));
  if (state == nullptr || state->alpn_wire.empty()) return SSL_TLSEXT_ERR_NOACK;
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, out_len, state->alpn_wire.data(),
                            static_cast<unsigned int>(state->alpn_wire.size()), in,
                            in_len) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

// The host_name of a ClientHello's server_name extension (RFC 6066 3), empty when there is none.
std::string_view requested_name(SSL* ssl) {
  const unsigned char* p = nullptr;
  std::size_t n = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p, &n) != 1 || n < 2) return {};
  std::size_t list = (std::size_t{p[0]} << 8) | p[1];
  p += 2;
  n -= 2;
  if (list > n) return {};
  while (list >= 3) {
    const unsigned char type = p[0];
    const std::size_t len = (std::size_t{p[1]} << 8) | p[2];
    if (len > list - 3) return {};
    if (type == TLSEXT_NAMETYPE_host_name) return {reinterpret_cast<const char*>(p + 3), len};
    p += 3 + len;
    list -= 3 + len;
  }
  return {};
}

// Server: SNI picks the context as soon as the ClientHello arrives, before OpenSSL looks for a
// session to resume. The server_name callback would come after it: a session would then be
// checked against the session id context of the default context, not the chosen one, and a
// session of one vhost could be resumed under another.
int select_context(SSL* ssl, int* alert, void* arg) {
  auto* state = static_cast<SslContextState*>(arg);
  const std::string_view name = requested_name(ssl);
  if (name.empty() || !state->sni) return SSL_CLIENT_HELLO_SUCCESS;
  std::optional<SslContext> chosen;
  try {
    chosen = state->sni(name);
  } catch (...) {
    *alert = SSL_AD_INTERNAL_ERROR;
    return SSL_CLIENT_HELLO_ERROR;
  }
  auto* data = static_cast<ConnectionData*>(SSL_get_ex_data(ssl, connection_data_index()));
  if (!chosen || data == nullptr) return SSL_CLIENT_HELLO_SUCCESS;
  std::shared_ptr<SslContextState> next = chosen->state();
  SSL_CTX* ctx = next->ctx;
  if (ctx == SSL_get_SSL_CTX(ssl)) return SSL_CLIENT_HELLO_SUCCESS;
  *alert = SSL_AD_INTERNAL_ERROR;
  // Its certificate and session id context.
  if (SSL_set_SSL_CTX(ssl, ctx) == nullptr) return SSL_CLIENT_HELLO_ERROR;
  // Not its client-certificate policy: copied, or a vhost that requires client certificates
  // would accept clients without one when chosen by SNI (as nginx does).
  SSL_set_verify(ssl, SSL_CTX_get_verify_mode(ctx), SSL_CTX_get_verify_callback(ctx));
  SSL_set_verify_depth(ssl, SSL_CTX_get_verify_depth(ctx));
  STACK_OF(X509_NAME)* names = SSL_CTX_get_client_CA_list(ctx);
  STACK_OF(X509_NAME)* copy = names != nullptr ? SSL_dup_CA_list(names) : nullptr;
  if (names != nullptr && copy == nullptr) return SSL_CLIENT_HELLO_ERROR;
  SSL_set_client_CA_list(ssl, copy);  // takes it (null: none)
  // Nor its protocol settings: versions, suites, groups, options (tickets, server order) and
  // ticket count. The ClientHello callback runs before any of them is used.
  SSL_clear_options(ssl, SSL_get_options(ssl));
  SSL_set_options(ssl, SSL_CTX_get_options(ctx));
  SSL_set_mode(ssl, SSL_CTX_get_mode(ctx));
  SSL_set_num_tickets(ssl, SSL_CTX_get_num_tickets(ctx));
  if (SSL_set_min_proto_version(ssl, SSL_CTX_get_min_proto_version(ctx)) != 1 ||
      SSL_set_max_proto_version(ssl, SSL_CTX_get_max_proto_version(ctx)) != 1 ||
      SSL_set_cipher_list(ssl, next->cipher_list.c_str()) != 1 ||
      SSL_set_ciphersuites(ssl, next->ciphersuites.c_str()) != 1 ||
      SSL_set1_groups_list(ssl, next->groups.c_str()) != 1) {
    return SSL_CLIENT_HELLO_ERROR;
  }
  data->sni_state = std::move(next);  // its state stays valid for the callbacks
  return SSL_CLIENT_HELLO_SUCCESS;
}

// Server: acknowledges the server name (the context was chosen by select_context).
int acknowledge_server_name(SSL* /*ssl*/, int* /*alert*/, void* /*arg*/) {
  return SSL_TLSEXT_ERR_OK;
}

// Client: a new session (TLS 1.3: a ticket arriving after the handshake) goes into the cache.
int on_new_session(SSL* ssl, SSL_SESSION* session) {
  const auto* data = static_cast<ConnectionData*>(SSL_get_ex_data(ssl, connection_data_index()));
  SslContextState* state = state_of(SSL_get_SSL_CTX(ssl));
  if (data == nullptr || state == nullptr) return 0;
  return state->sessions.put(data->session_key, session) ? 1 : 0;
}

// Replaces OpenSSL's chain verification: runs it, then the application's verify callback, whose
// decision is final. The verify result left in the store context becomes the SSL's.
int verify_with_callback(X509_STORE_CTX* store, void* arg) {
  const auto* state = static_cast<const SslContextState*>(arg);
  const int openssl_ok = X509_verify_cert(store);
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  auto* data = ssl != nullptr
                   ? static_cast<ConnectionData*>(SSL_get_ex_data(ssl, connection_data_index()))
                   : nullptr;
  PeerVerification peer;
  peer.openssl_result = openssl_ok == 1 ? X509_V_OK : X509_STORE_CTX_get_error(store);
  if (openssl_ok != 1 && peer.openssl_result == X509_V_OK) {
    peer.openssl_result = X509_V_ERR_UNSPECIFIED;  // failed without saying why
  }
  peer.openssl_result_text = X509_verify_cert_error_string(peer.openssl_result);
  std::string refusal;
  try {
    peer.chain =
        to_peer_chain(X509_STORE_CTX_get0_cert(store), X509_STORE_CTX_get0_untrusted(store));
    VerifyDecision decision = state->verify_callback(peer);
    if (!decision.accepted()) {
      refusal = decision.reason().empty() ? "no reason given" : decision.reason();
    }
  } catch (const std::exception& e) {
    refusal = std::string("the verify callback threw: ") + e.what();
  } catch (...) {
    refusal = "the verify callback threw";
  }
  if (!refusal.empty()) {
    if (data != nullptr) data->verify_refusal = std::move(refusal);
    X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
    return 0;
  }
  X509_STORE_CTX_set_error(store, X509_V_OK);  // accepted, whatever OpenSSL said
  return 1;
}

[[noreturn]] void fail(const std::string& what) { throw SslError(openssl_error_text(what)); }

// TLS 1.2: ECDHE only (forward secrecy), AEAD only (no CBC: Lucky13 and its kin), AES-128-GCM
// first as the cheapest with AES-NI (Mozilla's "intermediate" list without DHE).
constexpr const char* kDefaultCiphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
constexpr const char* kDefaultCiphersuites =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
constexpr const char* kDefaultGroups = "X25519:P-256:P-384";

int openssl_version(TlsVersion v) {
  return v == TlsVersion::kTls13 ? TLS1_3_VERSION : TLS1_2_VERSION;
}

// Versions, cipher suites and groups; an unusable list is an error, not a silent fallback.
void set_protocols(SslContextState& state, TlsVersion min, TlsVersion max,
                   const std::string& ciphers, const std::string& ciphersuites,
                   const std::string& groups) {
  SSL_CTX* ctx = state.ctx;
  if (static_cast<int>(min) > static_cast<int>(max)) {
    throw SslError("min_version is above max_version");
  }
  if (SSL_CTX_set_min_proto_version(ctx, openssl_version(min)) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, openssl_version(max)) != 1) {
    fail("cannot set the protocol versions");
  }
  const std::string& c12 = ciphers.empty() ? std::string(kDefaultCiphers) : ciphers;
  if (SSL_CTX_set_cipher_list(ctx, c12.c_str()) != 1) {
    fail("no usable TLS 1.2 cipher suite in '" + c12 + "'");
  }
  state.cipher_list = c12;
  const std::string c13 = ciphersuites.empty() ? std::string(kDefaultCiphersuites) : ciphersuites;
  // OpenSSL skips names it does not know: a list of none would turn TLS 1.3 off silently.
  bool any13 = false;
  if (SSL_CTX_set_ciphersuites(ctx, c13.c_str()) == 1) {
    STACK_OF(SSL_CIPHER)* all = SSL_CTX_get_ciphers(ctx);
    for (int i = 0; all != nullptr && i < sk_SSL_CIPHER_num(all); ++i) {
      const SSL_CIPHER* c = sk_SSL_CIPHER_value(all, i);
      if (std::string_view(SSL_CIPHER_get_version(c)) == "TLSv1.3") any13 = true;
    }
  }
  if (!any13) fail("no usable TLS 1.3 cipher suite in '" + c13 + "'");
  state.ciphersuites = c13;
  const std::string g = groups.empty() ? std::string(kDefaultGroups) : groups;
  if (SSL_CTX_set1_groups_list(ctx, g.c_str()) != 1) fail("unusable groups '" + g + "'");
  state.groups = g;
}

// A server context's session id context: sessions resume only under a context with the same
// certificate and client-certificate policy, so a session of one SNI vhost is not resumed under
// another. A digest, so that two builds of the same configuration (a reload) still agree.
void set_session_id_context(SSL_CTX* ctx, bool verify_peer, const std::string& ca_file,
                            const std::string& ca_dir, const std::string& ca_pem) {
  X509* cert = SSL_CTX_get0_certificate(ctx);
  unsigned char* der = nullptr;
  const int der_len = cert != nullptr ? i2d_X509(cert, &der) : 0;
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  const char policy = verify_peer ? 1 : 0;
  const bool ok =
      md != nullptr && EVP_DigestInit_ex(md, EVP_sha256(), nullptr) == 1 &&
      EVP_DigestUpdate(md, "trellis", 7) == 1 &&
      (der_len <= 0 || EVP_DigestUpdate(md, der, static_cast<std::size_t>(der_len)) == 1) &&
      EVP_DigestUpdate(md, &policy, 1) == 1 &&
      EVP_DigestUpdate(md, ca_file.data(), ca_file.size() + 1) == 1 &&
      EVP_DigestUpdate(md, ca_dir.data(), ca_dir.size() + 1) == 1 &&
      EVP_DigestUpdate(md, ca_pem.data(), ca_pem.size() + 1) == 1 &&
      EVP_DigestFinal_ex(md, digest, &digest_len) == 1;
  EVP_MD_CTX_free(md);
  OPENSSL_free(der);
  if (!ok) fail("cannot compute the session id context");
  static_assert(SSL_MAX_SID_CTX_LENGTH >= 32);
  if (SSL_CTX_set_session_id_context(ctx, digest, std::min(digest_len, 32u)) != 1) {
    fail("cannot set the session id context");
  }
}

// The subject names of the trusted CAs, for the CertificateRequest.
void set_client_ca_names(SSL_CTX* ctx, const std::string& ca_file, const std::string& ca_dir) {
  STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
  if (names == nullptr) fail("out of memory");
  if ((!ca_file.empty() && SSL_add_file_cert_subjects_to_stack(names, ca_file.c_str()) != 1) ||
      (!ca_dir.empty() && SSL_add_dir_cert_subjects_to_stack(names, ca_dir.c_str()) != 1)) {
    sk_X509_NAME_pop_free(names, X509_NAME_free);
    fail("cannot read the names of the trusted CAs");
  }
  SSL_CTX_set_client_CA_list(ctx, names);  // takes it
}

}  // namespace
}  // namespace detail

SslContextBuilder SslContextBuilder::for_server(std::string cert_chain_file, std::string key_file) {
  SslContextBuilder b;
  b.server_ = true;
  b.key_manager(std::move(cert_chain_file), std::move(key_file));
  return b;
}

SslContextBuilder SslContextBuilder::for_server_pem(std::string cert_chain_pem,
                                                    std::string key_pem) {
  SslContextBuilder b;
  b.server_ = true;
  b.key_manager_pem(std::move(cert_chain_pem), std::move(key_pem));
  return b;
}

SslContextBuilder SslContextBuilder::for_server_pkcs12(std::string file, std::string password) {
  SslContextBuilder b;
  b.server_ = true;
  b.key_manager_pkcs12(std::move(file), std::move(password));
  return b;
}

SslContextBuilder SslContextBuilder::for_client() {
  SslContextBuilder b;
  b.verify_peer_ = true;
  return b;
}

SslContextBuilder& SslContextBuilder::trust_ca_file(std::string file) {
  ca_file_ = std::move(file);
  return *this;
}
SslContextBuilder& SslContextBuilder::trust_ca_dir(std::string dir) {
  ca_dir_ = std::move(dir);
  return *this;
}
SslContextBuilder& SslContextBuilder::verify_peer(bool on) {
  verify_peer_ = on;
  return *this;
}
SslContextBuilder& SslContextBuilder::trust_ca_pem(std::string pem) {
  ca_pem_ = std::move(pem);
  return *this;
}
SslContextBuilder& SslContextBuilder::key_manager(std::string cert_chain_file,
                                                  std::string key_file) {
  key_source_ = KeySource::kFiles;
  cert_chain_ = std::move(cert_chain_file);
  key_ = std::move(key_file);
  return *this;
}
SslContextBuilder& SslContextBuilder::key_manager_pem(std::string cert_chain_pem,
                                                      std::string key_pem) {
  key_source_ = KeySource::kPem;
  cert_chain_ = std::move(cert_chain_pem);
  key_ = std::move(key_pem);
  return *this;
}
SslContextBuilder& SslContextBuilder::key_manager_pkcs12(std::string file, std::string password) {
  key_source_ = KeySource::kPkcs12;
  pkcs12_file_ = std::move(file);
  pkcs12_password_ = std::move(password);
  return *this;
}
SslContextBuilder& SslContextBuilder::key_password(std::string password) {
  key_password_ = std::move(password);
  return *this;
}
SslContextBuilder& SslContextBuilder::verify_callback(VerifyCallback callback) {
  verify_callback_ = std::move(callback);
  return *this;
}
SslContextBuilder& SslContextBuilder::verify_hostname(bool on) {
  verify_hostname_ = on;
  return *this;
}
SslContextBuilder& SslContextBuilder::alpn(std::vector<std::string> protocols) {
  alpn_ = std::move(protocols);
  return *this;
}
SslContextBuilder& SslContextBuilder::sni(SniCallback callback) {
  sni_ = std::move(callback);
  return *this;
}
SslContextBuilder& SslContextBuilder::session_cache_size(std::size_t sessions) {
  session_cache_size_ = sessions;
  return *this;
}
SslContextBuilder& SslContextBuilder::session_timeout(std::chrono::seconds timeout) {
  session_timeout_ = timeout;
  return *this;
}
SslContextBuilder& SslContextBuilder::session_tickets(bool on) {
  session_tickets_ = on;
  return *this;
}
SslContextBuilder& SslContextBuilder::session_ticket_key_rotation(
    std::chrono::nanoseconds interval) {
  ticket_key_rotation_ = interval;
  return *this;
}

SslContextBuilder& SslContextBuilder::min_version(TlsVersion version) {
  min_version_ = version;
  return *this;
}
SslContextBuilder& SslContextBuilder::max_version(TlsVersion version) {
  max_version_ = version;
  return *this;
}
SslContextBuilder& SslContextBuilder::ciphers(std::string list) {
  ciphers_ = std::move(list);
  return *this;
}
SslContextBuilder& SslContextBuilder::ciphersuites(std::string list) {
  ciphersuites_ = std::move(list);
  return *this;
}
SslContextBuilder& SslContextBuilder::groups(std::string list) {
  groups_ = std::move(list);
  return *this;
}

SslContextBuilder& SslContextBuilder::ocsp_response_file(std::string der_file) {
  ocsp_response_file_ = std::move(der_file);
  ocsp_response_.reset();
  return *this;
}
SslContextBuilder& SslContextBuilder::ocsp_response(std::vector<unsigned char> der) {
  ocsp_response_ = std::move(der);
  ocsp_response_file_.clear();
  return *this;
}
SslContextBuilder& SslContextBuilder::request_ocsp_stapling(bool on) {
  request_ocsp_stapling_ = on;
  return *this;
}

SslContextBuilder& SslContextBuilder::handshake_timeout(std::chrono::nanoseconds timeout) {
  handshake_timeout_ = timeout;
  return *this;
}

SslContext SslContextBuilder::build() const {
  ERR_clear_error();
  SSL_CTX* native = SSL_CTX_new(server_ ? TLS_server_method() : TLS_client_method());
  if (native == nullptr) detail::fail("SSL_CTX_new failed");
  const std::size_t cache_size = session_cache_size_.value_or(server_ ? 4096 : 256);
  if (session_timeout_.count() <= 0) {
    SSL_CTX_free(native);
    throw SslError("session_timeout must be positive");
  }
  auto state = std::make_shared<detail::SslContextState>(native, server_, server_ ? 0 : cache_size);
  SSL_CTX_set_app_data(native, state.get());
  state->verify_peer = verify_peer_;
  state->verify_hostname = verify_hostname_;
  state->handshake_timeout = handshake_timeout_;
  state->sni = sni_;
  state->verify_callback = verify_callback_;

  // TLS 1.2 at least; OpenSSL negotiates the highest both sides have, so 1.3 when it can.
  detail::set_protocols(*state, min_version_, max_version_, ciphers_, ciphersuites_, groups_);
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  // A server picks the suite by its own order (the strongest it likes), not the client's.
  if (server_) SSL_CTX_set_options(native, SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Records read and written go through memory BIOs: a write never needs retrying, and buffers
  // are released between records so an idle connection holds little memory.
  SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);

  for (const auto& p : alpn_) {
    if (p.empty() || p.size() > 255) throw SslError("ALPN protocol names are 1 to 255 bytes");
    state->alpn_wire.push_back(static_cast<unsigned char>(p.size()));
    state->alpn_wire.insert(state->alpn_wire.end(), p.begin(), p.end());
  }

  if (!ca_file_.empty() || !ca_dir_.empty()) {
    if (SSL_CTX_load_verify_locations(native, ca_file_.empty() ? nullptr : ca_file_.c_str(),
                                      ca_dir_.empty() ? nullptr : ca_dir_.c_str()) != 1) {
      detail::fail("cannot load trusted CAs from '" + (ca_file_.empty() ? ca_dir_ : ca_file_) +
                   "'");
    }
  }
  if (!ca_pem_.empty()) detail::trust_pem_text(native, ca_pem_);
  if (ca_file_.empty() && ca_dir_.empty() && ca_pem_.empty() && !server_ &&
      (verify_peer_ || verify_callback_)) {
    if (SSL_CTX_set_default_verify_paths(native) != 1) {
      detail::fail("cannot load the system's trusted CAs");
    }
  }

  // A server's certificate, or a client's certificate for mutual TLS (key_manager).
  if (server_ || key_source_ != KeySource::kNone) {
    switch (key_source_) {
      case KeySource::kNone:
      case KeySource::kFiles:
        detail::use_pem_files(native, cert_chain_, key_, key_password_);
        break;
      case KeySource::kPem:
        detail::use_pem_text(native, cert_chain_, key_, key_password_);
        break;
      case KeySource::kPkcs12:
        detail::use_pkcs12_file(native, pkcs12_file_, pkcs12_password_);
        break;
    }
    if (SSL_CTX_check_private_key(native) != 1) {
      detail::fail("the private key does not match the certificate");
    }
    detail::complete_chain_once(native);
  }
  // The chain sent is the one given (or completed above), never rebuilt per handshake.
  SSL_CTX_set_mode(native, SSL_MODE_NO_AUTO_CHAIN);

  if (server_) {
    detail::set_session_id_context(native, verify_peer_, ca_file_, ca_dir_, ca_pem_);
    // Resumption by tickets under our rotating keys: no per-session state on the server. One
    // ticket per handshake is enough for a client that keeps one session per server. The cache,
    // bounded, is for TLS 1.2 clients without tickets, and for every client without tickets.
    SSL_CTX_set_timeout(native, static_cast<long>(session_timeout_.count()));
    if (session_tickets_) {
      state->ticket_keys =
          std::make_shared<detail::SessionTicketKeys>(ticket_key_rotation_, session_timeout_);
      SSL_CTX_set_tlsext_ticket_key_evp_cb(native, detail::session_ticket_key_callback);
    } else {
      SSL_CTX_set_options(native, SSL_OP_NO_TICKET);
    }
    SSL_CTX_set_num_tickets(native, 1);
    if (cache_size == 0) {
      SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_OFF);
    } else {
      SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_SERVER);
      SSL_CTX_sess_set_cache_size(native, static_cast<long>(cache_size));
    }
    if (verify_peer_) {
      SSL_CTX_set_verify(native, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      if (!ca_file_.empty() || !ca_dir_.empty())
        detail::set_client_ca_names(native, ca_file_, ca_dir_);
      if (!ca_pem_.empty()) detail::add_client_ca_names_pem(native, ca_pem_);
    }
    if (!state->alpn_wire.empty()) SSL_CTX_set_alpn_select_cb(native, detail::select_alpn, nullptr);
    if (sni_) {
      SSL_CTX_set_client_hello_cb(native, detail::select_context, state.get());
      SSL_CTX_set_tlsext_servername_callback(native, detail::acknowledge_server_name);
    }
  } else {
    // With a verify callback, its decision counts even without verify_peer: SSL_VERIFY_NONE
    // would let the handshake go on after a refusal.
    SSL_CTX_set_verify(native, verify_peer_ || verify_callback_ ? SSL_VERIFY_PEER : SSL_VERIFY_NONE,
                       nullptr);
    if (!state->alpn_wire.empty() &&
        SSL_CTX_set_alpn_protos(native, state->alpn_wire.data(),
                                static_cast<unsigned int>(state->alpn_wire.size())) != 0) {
      detail::fail("cannot set the ALPN protocols");
    }
    SSL_CTX_set_timeout(native, static_cast<long>(session_timeout_.count()));
    if (cache_size > 0) {
      // Sessions are kept by us, per server name, not in OpenSSL's internal cache.
      SSL_CTX_set_session_cache_mode(native,
                                     SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
      SSL_CTX_sess_set_new_cb(native, detail::on_new_session);
    }
  }
  detail::configure_ocsp(native, *state, server_, ocsp_response_file_, ocsp_response_,
                         request_ocsp_stapling_);
  if (verify_callback_)
    SSL_CTX_set_cert_verify_callback(native, detail::verify_with_callback, state.get());
  return SslContext(std::move(state));
}

}  // namespace trellis::ssl
