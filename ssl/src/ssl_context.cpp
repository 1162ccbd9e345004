#include <trellis/ssl/ssl_context.hpp>

#include <utility>

#include "ssl_context_state.hpp"

namespace trellis::ssl {

bool SslContext::is_server() const noexcept { return state_->server; }

SSL_CTX* SslContext::native_handle() const noexcept { return state_->ctx; }

std::size_t SslContext::cached_sessions() const { return state_->sessions.size(); }

namespace detail {

ClientSessionCache::~ClientSessionCache() {
  for (auto& [key, session] : sessions_) SSL_SESSION_free(session);
}

bool ClientSessionCache::put(const std::string& key, SSL_SESSION* session) {
  if (capacity_ == 0 || key.empty()) return false;
  SSL_SESSION* old = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(key);
    if (it != sessions_.end()) {
      old = std::exchange(it->second, session);
    } else {
      if (sessions_.size() >= capacity_) {
        // Any victim will do: a cache miss costs one full handshake.
        old = sessions_.begin()->second;
        sessions_.erase(sessions_.begin());
      }
      sessions_.emplace(key, session);
    }
  }
  if (old != nullptr) SSL_SESSION_free(old);
  return true;
}

bool ClientSessionCache::apply(const std::string& key, SSL* ssl) {
  if (capacity_ == 0 || key.empty()) return false;
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(key);
  if (it == sessions_.end() || !SSL_SESSION_is_resumable(it->second)) return false;
  return SSL_set_session(ssl, it->second) == 1;  // takes its own reference
}

std::size_t ClientSessionCache::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

}  // namespace detail
}  // namespace trellis::ssl
