// SslContextBuilder: builds an SslContext for a server (certificate chain and key) or a client
// (trusted CAs, peer and hostname verification), with ALPN, SNI and session resumption. The
// defaults are safe: TLS 1.2 at least, 1.3 preferred, forward-secret AEAD cipher suites only
// (the server's order), X25519 first, and on a client the peer's certificate and hostname
// verified against the system's trust store.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <trellis/ssl/ssl_context.hpp>
#include <trellis/ssl/verify_callback.hpp>

namespace trellis::ssl {

/// The TLS protocol versions a context may negotiate (older ones are never offered).
enum class TlsVersion {
  kTls12,  ///< TLS 1.2
  kTls13,  ///< TLS 1.3
};

/// Chooses the server context for the name a client asked for (SNI). nullopt keeps the context
/// the handler was made with. Called on the connection's event loop, during the handshake.
using SniCallback = std::function<std::optional<SslContext>(std::string_view server_name)>;

/// Builds an SslContext for a server (certificate chain and key) or a client (trusted CAs, peer
/// and hostname verification), with ALPN, SNI and session resumption. The setters return the
/// builder, for chaining; build() loads the files and may be called more than once. Not
/// thread-safe; the contexts it builds are.
class SslContextBuilder {
 public:
  /// A server presenting the PEM certificate chain (leaf first) and private key of these files.
  static SslContextBuilder for_server(std::string cert_chain_file, std::string key_file);
  /// A server presenting a certificate chain (leaf first) and private key given as PEM text.
  static SslContextBuilder for_server_pem(std::string cert_chain_pem, std::string key_pem);
  /// A server presenting the certificate, private key and chain (its other certificates) of a
  /// PKCS#12 file (.p12, .pfx), opened with password.
  static SslContextBuilder for_server_pkcs12(std::string file, std::string password);
  /// A client: verifies the server's certificate and hostname against the system's trust store
  /// unless told otherwise.
  static SslContextBuilder for_client();

  ///@{
  /// Trusted CAs: a PEM file, or a directory prepared with `openssl rehash`. Setting either
  /// replaces the system store on a client.
  SslContextBuilder& trust_ca_file(std::string file);
  SslContextBuilder& trust_ca_dir(std::string dir);
  ///@}
  /// Trusted CAs given as PEM text (one or more certificates), in addition to trust_ca_file and
  /// trust_ca_dir; it too replaces the system store on a client.
  SslContextBuilder& trust_ca_pem(std::string pem);
  /// Verify the peer's certificate: on by default on a client; on a server it asks for a client
  /// certificate from its trusted CAs (trust_ca_file, trust_ca_dir), naming them in the request,
  /// and refuses a client without one.
  SslContextBuilder& verify_peer(bool on);
  /// The certificate chain (PEM, leaf first) and private key this side presents: on a client, the
  /// client certificate for mutual TLS; on a server, it replaces the certificate given to
  /// for_server().
  SslContextBuilder& key_manager(std::string cert_chain_file, std::string key_file);
  /// key_manager with the certificate chain (leaf first) and private key given as PEM text.
  SslContextBuilder& key_manager_pem(std::string cert_chain_pem, std::string key_pem);
  /// key_manager with the certificate, private key and chain of a PKCS#12 file, opened with
  /// password.
  SslContextBuilder& key_manager_pkcs12(std::string file, std::string password);
  /// The password of an encrypted PEM private key (a file or PEM text; PKCS#12 files take their
  /// own). build() fails with SslError saying "wrong password", or asking for key_password when
  /// the key is encrypted and no password was given; it never prompts.
  SslContextBuilder& key_password(std::string password);
  /// The application's check of the peer's chain, once per handshake after OpenSSL's own
  /// verification (see VerifyCallback): given the chain and OpenSSL's verdict, its decision is
  /// final; a refusal fails the handshake with SslHandshakeError carrying its reason (and
  /// verify_result() X509_V_ERR_APPLICATION_VERIFICATION). On a client it runs for every
  /// handshake, whatever verify_peer says; on a server, for a client that sent a certificate
  /// (verify_peer(true) asks for one). A resumed session is not checked again.
  SslContextBuilder& verify_callback(VerifyCallback callback);
  /// A client checks that the certificate names the server name of its SslHandler (on by default).
  SslContextBuilder& verify_hostname(bool on);
  /// Application protocols offered (client) or accepted, in order of preference (server):
  /// alpn({"h2", "http/1.1"}). A server that shares none with the client goes on without ALPN.
  SslContextBuilder& alpn(std::vector<std::string> protocols);
  /// Server: picks another context per requested server name.
  SslContextBuilder& sni(SniCallback callback);
  ///@{
  /// Server: the OCSP response stapled to the handshake of a client that asks for it
  /// (status_request), as DER (what `openssl ocsp -respout` writes): from a file, or given as
  /// bytes; the last one set counts. build() reads and checks it: a successful response with a
  /// status for this context's certificate (whose issuer must be in the certificate chain) that
  /// has not passed its next update; SslError says what is wrong. It is read once: to staple a
  /// fresher response, reload the context (SslContext::reload).
  SslContextBuilder& ocsp_response_file(std::string der_file);
  SslContextBuilder& ocsp_response(std::vector<unsigned char> der);
  ///@}
  /// Client: asks the server to staple an OCSP response (off by default);
  /// SslHandler::stapled_ocsp_response() gives it after the handshake, for the application to
  /// check.
  SslContextBuilder& request_ocsp_stapling(bool on);
  /// How many sessions are kept for resumption; 0 turns the cache off. A client keeps one per
  /// server name (256 by default). A server's cache (4,096 by default; a full cache drops its
  /// least recently used session) serves TLS 1.2 clients that do not take tickets, and every
  /// client with session_tickets(false); with tickets, TLS 1.3 resumption keeps no state on the
  /// server.
  SslContextBuilder& session_cache_size(std::size_t sessions);
  /// How long a session can be resumed after its full handshake: the lifetime of the tickets a
  /// server issues and of the sessions it caches (2 hours by default, as OpenSSL's).
  SslContextBuilder& session_timeout(std::chrono::seconds timeout);
  /// Server: resume with session tickets (on by default): the session's state, encrypted under a
  /// key only this context holds, is kept by the client. Off: sessions are kept in the server's
  /// bounded cache instead (session_cache_size).
  SslContextBuilder& session_tickets(bool on);
  /// Server: how long one ticket key encrypts new tickets before a new random key replaces it,
  /// on the clock of the loop running the handshake (1 hour by default; zero or less: only
  /// SslContext::rotate_session_ticket_keys rotates). A replaced key still decrypts tickets (and
  /// has them renewed under the new key) for session_timeout, then is forgotten, so a stolen key
  /// exposes at most rotation plus session_timeout of sessions.
  SslContextBuilder& session_ticket_key_rotation(std::chrono::nanoseconds interval);
  /// How long a handshake may take, from its start (the channel becoming active, or the handler
  /// added to an active channel), on the channel's loop clock: past it the handshake fails with
  /// SslHandshakeError and the channel is closed. 10 s by default; zero or less: no deadline.
  /// SslHandler::set_handshake_timeout changes it for one handler.
  SslContextBuilder& handshake_timeout(std::chrono::nanoseconds timeout);

  ///@{
  /// The protocol versions negotiated: TLS 1.2 to TLS 1.3 by default (1.3 when both sides have
  /// it).
  SslContextBuilder& min_version(TlsVersion version);
  SslContextBuilder& max_version(TlsVersion version);
  ///@}
  /// The TLS 1.2 cipher suites, an OpenSSL cipher list in order of preference. Default: ECDHE key
  /// exchange (forward secrecy) with AES-GCM or ChaCha20-Poly1305 only, no CBC suites; a server
  /// enforces its own order.
  SslContextBuilder& ciphers(std::string list);
  /// The TLS 1.3 cipher suites (`TLS_AES_128_GCM_SHA256:...`). Default: OpenSSL's three AEAD
  /// suites, AES-128-GCM first.
  SslContextBuilder& ciphersuites(std::string list);
  /// The key exchange groups in order of preference. Default: `X25519:P-256:P-384`.
  SslContextBuilder& groups(std::string list);

  /// Throws SslError (with OpenSSL's reason) when a file or PEM text cannot be loaded, a password
  /// is wrong or missing, the key does not match the certificate, a cipher list, group list or
  /// version range is unusable, or the OCSP response cannot be stapled.
  SslContext build() const;

 private:
  SslContextBuilder() = default;

  // Where the certificate chain and key come from.
  enum class KeySource { kNone, kFiles, kPem, kPkcs12 };

  bool server_ = false;
  KeySource key_source_ = KeySource::kNone;
  std::string cert_chain_;  // kFiles: the chain file; kPem: the chain's PEM text
  std::string key_;         // kFiles: the key file; kPem: the key's PEM text
  std::string pkcs12_file_;
  std::string pkcs12_password_;
  std::string key_password_;
  std::string ca_file_;
  std::string ca_dir_;
  std::string ca_pem_;
  bool verify_peer_ = false;
  bool verify_hostname_ = true;
  std::vector<std::string> alpn_;
  SniCallback sni_;
  VerifyCallback verify_callback_;
  std::optional<std::size_t> session_cache_size_;  // default: 256 (client), 4096 (server)
  std::chrono::seconds session_timeout_ = std::chrono::hours(2);
  bool session_tickets_ = true;
  std::chrono::nanoseconds ticket_key_rotation_ = std::chrono::hours(1);
  std::chrono::nanoseconds handshake_timeout_ = std::chrono::seconds(10);
  TlsVersion min_version_ = TlsVersion::kTls12;
  TlsVersion max_version_ = TlsVersion::kTls13;
  std::string ciphers_;
  std::string ciphersuites_;
  std::string groups_;
  std::string ocsp_response_file_;
  std::optional<std::vector<unsigned char>> ocsp_response_;
  bool request_ocsp_stapling_ = false;
};

}  // namespace trellis::ssl
