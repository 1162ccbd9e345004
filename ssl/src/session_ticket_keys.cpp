#include "session_ticket_keys.hpp"

#include <algorithm>
#include <cstring>

#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <trellis/pipeline/abstract_scheduled_event_executor.hpp>
#include <trellis/ssl/ssl_error.hpp>

#include "openssl_errors.hpp"
#include "ssl_context_state.hpp"

namespace trellis::ssl::detail {

namespace {

// Clocks of different loops need not agree: an age below zero counts as zero.
std::int64_t age(std::int64_t since, std::int64_t now) { return now > since ? now - since : 0; }

// AES-256-CBC fetched once: EVP_aes_256_cbc() would be looked up by name in every ticket's
// EVP_*Init_ex (OpenSSL 3's implicit fetch). Never freed: it lives as long as the process.
const EVP_CIPHER* ticket_cipher() {
  static EVP_CIPHER* const cipher = EVP_CIPHER_fetch(nullptr, "AES-256-CBC", nullptr);
  return cipher != nullptr ? cipher : EVP_aes_256_cbc();
}

}  // namespace

void SessionTicketKeys::add_key(std::int64_t now_nanos) {
  Entry e;
  if (RAND_bytes(e.key.name.data(), static_cast<int>(e.key.name.size())) != 1 ||
      RAND_priv_bytes(e.key.aes.data(), static_cast<int>(e.key.aes.size())) != 1 ||
      RAND_priv_bytes(e.key.hmac.data(), static_cast<int>(e.key.hmac.size())) != 1) {
    throw SslError(openssl_error_text("cannot make a session ticket key"));
  }
  e.created = now_nanos;
  if (!keys_.empty()) keys_.front().retired = now_nanos;
  keys_.push_front(e);
}

void SessionTicketKeys::drop_expired(std::int64_t now_nanos) {
  // Retired keys are at the back, oldest last.
  while (keys_.size() > 1 && age(keys_.back().retired, now_nanos) >= lifetime_.count()) {
    keys_.pop_back();
  }
}

SessionTicketKeys::Key SessionTicketKeys::encryption_key(std::int64_t now_nanos) {
  std::lock_guard lock(mutex_);
  if (keys_.empty() || rotate_pending_ ||
      (rotation_.count() > 0 && age(keys_.front().created, now_nanos) >= rotation_.count())) {
    add_key(now_nanos);
    rotate_pending_ = false;
  }
  drop_expired(now_nanos);
  return keys_.front().key;
}

std::optional<SessionTicketKeys::Key> SessionTicketKeys::decryption_key(const unsigned char* name,
                                                                        std::int64_t now_nanos,
                                                                        bool& renew) {
  std::lock_guard lock(mutex_);
  drop_expired(now_nanos);  // what is left still decrypts
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    const Entry& e = keys_[i];
    if (std::memcmp(e.key.name.data(), name, kNameSize) != 0) continue;
    // The newest key renews too once it is due for rotation, so the new ticket is under the next.
    renew = i > 0 || rotate_pending_ ||
            (rotation_.count() > 0 && age(e.created, now_nanos) >= rotation_.count());
    return e.key;
  }
  return std::nullopt;
}

void SessionTicketKeys::rotate() {
  std::lock_guard lock(mutex_);
  if (!keys_.empty()) rotate_pending_ = true;
}

std::size_t SessionTicketKeys::size() const {
  std::lock_guard lock(mutex_);
  return keys_.size();
}

int session_ticket_key_callback(SSL* ssl, unsigned char* key_name, unsigned char* iv,
                                EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac, int encrypt) {
  // The context SNI chose (tickets of one vhost are under its own keys).
  const auto* state =
      static_cast<const SslContextState*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  if (state == nullptr || !state->ticket_keys)
    return 0;  // encrypting: no ticket; decrypting: not ours
  const auto* data =
      static_cast<const ConnectionData*>(SSL_get_ex_data(ssl, connection_data_index()));
  const std::int64_t now = data != nullptr && data->clock != nullptr
                               ? data->clock->current_time_nanos()
                               : AbstractScheduledEventExecutor::monotonic_nanos();
  try {
    SessionTicketKeys::Key key;
    int result = 1;
    if (encrypt != 0) {
      key = state->ticket_keys->encryption_key(now);
      if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(ticket_cipher())) != 1) return -1;
      std::memcpy(key_name, key.name.data(), SessionTicketKeys::kNameSize);
    } else {
      bool renew = false;
      auto found = state->ticket_keys->decryption_key(key_name, now, renew);
      if (!found) return 0;  // unknown or expired key: a full handshake
      key = *found;
      // TLS 1.3 tickets are single-use (RFC 8446 C.4; OpenSSL's client uses one once): a resumed
      // connection gets a new ticket, as after a full handshake, or the next connection could
      // not resume. OpenSSL sends one only when asked to renew.
      result = renew || SSL_version(ssl) == TLS1_3_VERSION ? 2 : 1;
    }
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key.hmac.data(), key.hmac.size()),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_end()};
    if (EVP_MAC_CTX_set_params(mac, params) != 1) return -1;
    const int ok = encrypt != 0
                       ? EVP_EncryptInit_ex2(cipher, ticket_cipher(), key.aes.data(), iv, nullptr)
                       : EVP_DecryptInit_ex2(cipher, ticket_cipher(), key.aes.data(), iv, nullptr);
    OPENSSL_cleanse(key.aes.data(), key.aes.size());
    OPENSSL_cleanse(key.hmac.data(), key.hmac.size());
    return ok == 1 ? result : -1;
  } catch (...) {
    return -1;  // no random key could be made
  }
}

}  // namespace trellis::ssl::detail
