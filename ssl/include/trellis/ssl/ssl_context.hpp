// SslContext: the shareable TLS configuration (an OpenSSL SSL_CTX) that SslHandlers are made
// from. One context serves any number of connections on any number of threads; it is built by
// SslContextBuilder, and a running server can reload it (a new certificate and key) without
// touching the connections already made from it.
#pragma once

#include <cstddef>
#include <memory>

typedef struct ssl_ctx_st SSL_CTX;  // NOLINT(modernize-use-using): OpenSSL's own declaration

namespace trellis::ssl {

class SslContextBuilder;

namespace detail {
struct SslContextState;
struct SslContextCell;
}  // namespace detail

/// The shareable TLS configuration (an OpenSSL SSL_CTX) that SslHandlers are made from: a cheap
/// handle, copied by value; copies share one configuration. One context serves any number of
/// connections on any number of threads. Built by SslContextBuilder. Thread-safe.
class SslContext {
 public:
  /// True for a context from SslContextBuilder::for_server().
  bool is_server() const noexcept;
  /// The current OpenSSL context, for settings the builder does not offer. Changing it after
  /// handlers were made from it affects only handlers made afterwards; reload() replaces it (the
  /// pointer stays valid while handlers made from it live).
  SSL_CTX* native_handle() const noexcept;

  /// Sessions kept for resumption: on a client, one per server name; on a server, the sessions
  /// of its bounded session cache (TLS 1.2 clients without tickets, or session_tickets(false)).
  std::size_t cached_sessions() const;

  /// Replaces the configuration with builder's (built now: files are read again), for every copy
  /// of this context and every SslHandler made from it afterwards; connections already made keep
  /// the configuration they started with, so none is dropped. The way to swap a server's
  /// certificate and key before they expire, or to pick up a new OCSP response. Session ticket
  /// keys carry over (sessions resume across a reload when the certificate and client
  /// certificate policy did not change). Throws SslError, changing nothing, when the builder
  /// fails or builds the other side (a client context for a server).
  void reload(const SslContextBuilder& builder);

  /// Servers: new session tickets are encrypted under a new key from the next handshake on;
  /// tickets under the previous key still resume (and are renewed) until they would have
  /// expired. Keys also rotate by themselves (SslContextBuilder::session_ticket_key_rotation).
  void rotate_session_ticket_keys();
  /// Servers: the session ticket keys held, the newest and those still decrypting.
  std::size_t session_ticket_keys() const;

  /// Internal: the configuration as of now, for SslHandler (which keeps it for its connection).
  std::shared_ptr<detail::SslContextState> state() const;

 private:
  friend class SslContextBuilder;
  explicit SslContext(std::shared_ptr<detail::SslContextState> state);

  std::shared_ptr<detail::SslContextCell> cell_;
};

}  // namespace trellis::ssl
