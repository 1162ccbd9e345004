// SessionTicketKeys: a server context's keys for session tickets (RFC 5077, and TLS 1.3's
// stateless tickets), rotated on the clock of the loop running the handshake. The newest key
// encrypts new tickets; a key that stopped encrypting still decrypts (and the ticket is renewed
// under the newest) until tickets it issued may have expired, then it is forgotten.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include <openssl/evp.h>
#include <openssl/ssl.h>

namespace trellis::ssl::detail {

class SessionTicketKeys {
 public:
  static constexpr std::size_t kNameSize = 16;

  struct Key {
    std::array<unsigned char, kNameSize> name{};
    std::array<unsigned char, 32> aes{};   // AES-256-CBC, as OpenSSL's own ticket format
    std::array<unsigned char, 32> hmac{};  // HMAC-SHA256
  };

  // A key encrypts for rotation; it decrypts for session_lifetime after that.
  SessionTicketKeys(std::chrono::nanoseconds rotation, std::chrono::nanoseconds session_lifetime)
      : rotation_(rotation), lifetime_(session_lifetime) {}
  SessionTicketKeys(const SessionTicketKeys&) = delete;
  SessionTicketKeys& operator=(const SessionTicketKeys&) = delete;

  // The key new tickets are encrypted with at now_nanos (made, or rotated, first when due).
  // Throws SslError when no random key can be made.
  Key encryption_key(std::int64_t now_nanos);
  // The key named name if it still decrypts at now_nanos; renew is set when it is not the
  // newest (the ticket should be replaced by one under the newest key).
  std::optional<Key> decryption_key(const unsigned char* name, std::int64_t now_nanos, bool& renew);
  // The next ticket is encrypted under a new key; the current one goes on decrypting.
  void rotate();
  // Keys held (the newest and those still decrypting), as of the last use.
  std::size_t size() const;

 private:
  struct Entry {
    Key key;
    std::int64_t created = 0;  // when it became the newest
    std::int64_t retired = 0;  // when a newer one replaced it (0: it is the newest)
  };
  void drop_expired(std::int64_t now_nanos);
  void add_key(std::int64_t now_nanos);

  const std::chrono::nanoseconds rotation_;
  const std::chrono::nanoseconds lifetime_;
  mutable std::mutex mutex_;
  std::deque<Entry> keys_;  // newest first
  bool rotate_pending_ = false;
};

// OpenSSL's ticket key callback (SSL_CTX_set_tlsext_ticket_key_evp_cb) for a server context
// whose state has ticket_keys: encrypts under the newest key, decrypts under any key still held
// (2, renew, when it is not the newest), on the clock of the connection's loop.
int session_ticket_key_callback(SSL* ssl, unsigned char* key_name, unsigned char* iv,
                                EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac, int encrypt);

}  // namespace trellis::ssl::detail
