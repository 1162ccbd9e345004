// What an SslContext shares between its handles and its handlers: the SSL_CTX, the settings
// OpenSSL does not keep for us (hostname verification, SNI callback, ALPN list, the lists an SNI
// switch must copy), the client's session cache and the server's session ticket keys; and the
// cell through which a reload replaces it for every handle.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <openssl/ssl.h>

#include <trellis/ssl/ssl_context_builder.hpp>

#include "session_ticket_keys.hpp"

namespace trellis {
class EventExecutor;
}

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
  // Server: session ticket keys (null with session_tickets(false)); shared across reloads.
  std::shared_ptr<SessionTicketKeys> ticket_keys;
  // What SSL_set_SSL_CTX does not carry over when SNI picks this context, as set on ctx.
  std::string cipher_list;
  std::string ciphersuites;
  std::string groups;
};

// The state every copy of an SslContext sees; reload() replaces it.
struct SslContextCell {
  explicit SslContextCell(std::shared_ptr<SslContextState> state)
      : server(state->server), current(std::move(state)) {}
  std::shared_ptr<SslContextState> get() const {
    std::lock_guard lock(mutex);
    return current;
  }
  void set(std::shared_ptr<SslContextState> state) {
    std::lock_guard lock(mutex);
    current.swap(state);  // the old state is released with the parameter, after the lock
  }

  const bool server;
  mutable std::mutex mutex;
  std::shared_ptr<SslContextState> current;
};

// What a connection's SSL carries for the callbacks (in the ex_data slot
// connection_data_index()); owned by its SslHandler.
struct ConnectionData {
  std::string session_key;  // client: the session cache key (the server name)
  // server: the configuration SNI chose, kept alive for the callbacks
  std::shared_ptr<SslContextState> sni_state;
  std::string verify_refusal;  // why the verify callback refused the peer
  // The clock session ticket keys rotate on: the channel's loop (null: the monotonic clock).
  const EventExecutor* clock = nullptr;
};
int connection_data_index();

}  // namespace trellis::ssl::detail
