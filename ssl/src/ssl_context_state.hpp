// What an SslContext shares between its handles and its handlers: the SSL_CTX, the settings
// OpenSSL does not keep for us (hostname verification, SNI callback, ALPN list) and the client's
// session cache.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <openssl/ssl.h>

#include <trellis/ssl/ssl_context_builder.hpp>

namespace trellis::ssl::detail {

// Client sessions for resumption, one per server name, shared by every loop using the context.
class ClientSessionCache {
 public:
  explicit ClientSessionCache(std::size_t capacity) : capacity_(capacity) {}
  ClientSessionCache(const ClientSessionCache&) = delete;
  ClientSessionCache& operator=(const ClientSessionCache&) = delete;
  ~ClientSessionCache();

  // Takes over the reference of session (returns false, taking nothing, when the cache is off).
  bool put(const std::string& key, SSL_SESSION* session);
  // Sets the session cached for key on ssl, if any; true when one was set.
  bool apply(const std::string& key, SSL* ssl);
  std::size_t size() const;
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, SSL_SESSION*> sessions_;
};

struct SslContextState {
  SslContextState(SSL_CTX* native, bool is_server, std::size_t session_cache_size)
      : ctx(native), server(is_server), sessions(session_cache_size) {}
  SslContextState(const SslContextState&) = delete;
  SslContextState& operator=(const SslContextState&) = delete;
  ~SslContextState() { SSL_CTX_free(ctx); }

  SSL_CTX* ctx;
  bool server;
  bool verify_peer = false;
  bool verify_hostname = true;
  std::chrono::nanoseconds handshake_timeout = std::chrono::seconds(10);
  std::vector<unsigned char> alpn_wire;  // length-prefixed protocol names
  SniCallback sni;
  VerifyCallback verify_callback;
  std::vector<unsigned char> ocsp_response;  // server: the DER OCSP response to staple
  ClientSessionCache sessions;
};

// What a connection's SSL carries for the callbacks (in the ex_data slot
// connection_data_index()); owned by its SslHandler.
struct ConnectionData {
  std::string session_key;                // client: the session cache key (the server name)
  std::optional<SslContext> sni_context;  // server: the context SNI chose, kept alive
  std::string verify_refusal;             // why the verify callback refused the peer
};
int connection_data_index();

}  // namespace trellis::ssl::detail
