#include <trellis/ssl/ssl_context_builder.hpp>

#include <trellis/ssl/ssl_error.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "openssl_errors.hpp"
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

int select_server_name(SSL* ssl, int* /*alert*/, void* arg) {
  auto* state = static_cast<SslContextState*>(arg);
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (name == nullptr || !state->sni) return SSL_TLSEXT_ERR_OK;
  std::optional<SslContext> chosen;
  try {
    chosen = state->sni(name);
  } catch (...) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  auto* data = static_cast<ConnectionData*>(SSL_get_ex_data(ssl, connection_data_index()));
  if (chosen && data != nullptr && chosen->native_handle() != SSL_get_SSL_CTX(ssl)) {
    if (SSL_set_SSL_CTX(ssl, chosen->native_handle()) == nullptr) {
      return SSL_TLSEXT_ERR_ALERT_FATAL;
    }
    data->sni_context = std::move(chosen);  // its state stays valid for the callbacks
  }
  return SSL_TLSEXT_ERR_OK;
}

// Client: a new session (TLS 1.3: a ticket arriving after the handshake) goes into the cache.
int on_new_session(SSL* ssl, SSL_SESSION* session) {
  const auto* data = static_cast<ConnectionData*>(SSL_get_ex_data(ssl, connection_data_index()));
  SslContextState* state = state_of(SSL_get_SSL_CTX(ssl));
  if (data == nullptr || state == nullptr) return 0;
  return state->sessions.put(data->session_key, session) ? 1 : 0;
}

[[noreturn]] void fail(const std::string& what) { throw SslError(openssl_error_text(what)); }

}  // namespace
}  // namespace detail

SslContextBuilder SslContextBuilder::for_server(std::string cert_chain_file, std::string key_file) {
  SslContextBuilder b;
  b.server_ = true;
  b.cert_chain_file_ = std::move(cert_chain_file);
  b.key_file_ = std::move(key_file);
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

SslContext SslContextBuilder::build() const {
  ERR_clear_error();
  SSL_CTX* native = SSL_CTX_new(server_ ? TLS_server_method() : TLS_client_method());
  if (native == nullptr) detail::fail("SSL_CTX_new failed");
  auto state =
      std::make_shared<detail::SslContextState>(native, server_, server_ ? 0 : session_cache_size_);
  SSL_CTX_set_app_data(native, state.get());
  state->verify_peer = verify_peer_;
  state->verify_hostname = verify_hostname_;
  state->sni = sni_;

  // TLS 1.2 at least; OpenSSL negotiates the highest both sides have, so 1.3 when it can.
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
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
  } else if (!server_ && verify_peer_) {
    if (SSL_CTX_set_default_verify_paths(native) != 1) {
      detail::fail("cannot load the system's trusted CAs");
    }
  }

  if (server_) {
    if (SSL_CTX_use_certificate_chain_file(native, cert_chain_file_.c_str()) != 1) {
      detail::fail("cannot load the certificate chain '" + cert_chain_file_ + "'");
    }
    if (SSL_CTX_use_PrivateKey_file(native, key_file_.c_str(), SSL_FILETYPE_PEM) != 1) {
      detail::fail("cannot load the private key '" + key_file_ + "'");
    }
    if (SSL_CTX_check_private_key(native) != 1) {
      detail::fail("the private key does not match the certificate");
    }
    static const unsigned char kSessionContext[] = "trellis";
    SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1);
    // Resumption by stateless tickets: no per-session state on the server. One ticket per
    // handshake is enough for a client that keeps one session per server.
    SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(native, 1);
    if (verify_peer_) {
      SSL_CTX_set_verify(native, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
    if (!state->alpn_wire.empty()) SSL_CTX_set_alpn_select_cb(native, detail::select_alpn, nullptr);
    if (sni_) {
      SSL_CTX_set_tlsext_servername_callback(native, detail::select_server_name);
      SSL_CTX_set_tlsext_servername_arg(native, state.get());
    }
  } else {
    SSL_CTX_set_verify(native, verify_peer_ ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
    if (!state->alpn_wire.empty() &&
        SSL_CTX_set_alpn_protos(native, state->alpn_wire.data(),
                                static_cast<unsigned int>(state->alpn_wire.size())) != 0) {
      detail::fail("cannot set the ALPN protocols");
    }
    if (session_cache_size_ > 0) {
      // Sessions are kept by us, per server name, not in OpenSSL's internal cache.
      SSL_CTX_set_session_cache_mode(native,
                                     SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
      SSL_CTX_sess_set_new_cb(native, detail::on_new_session);
    }
  }
  return SslContext(std::move(state));
}

}  // namespace trellis::ssl
