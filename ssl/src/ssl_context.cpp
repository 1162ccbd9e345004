#include <trellis/ssl/ssl_context.hpp>

#include <utility>

#include <trellis/ssl/ssl_context_builder.hpp>
#include <trellis/ssl/ssl_error.hpp>

#include "ssl_context_state.hpp"

namespace trellis::ssl {

SslContext::SslContext(std::shared_ptr<detail::SslContextState> state)
    : cell_(std::make_shared<detail::SslContextCell>(std::move(state))) {}

std::shared_ptr<detail::SslContextState> SslContext::state() const { return cell_->get(); }

bool SslContext::is_server() const noexcept { return cell_->server; }

SSL_CTX* SslContext::native_handle() const noexcept { return cell_->get()->ctx; }

std::size_t SslContext::cached_sessions() const {
  const auto state = cell_->get();
  if (state->server) return static_cast<std::size_t>(SSL_CTX_sess_number(state->ctx));
  return state->sessions.size();
}

void SslContext::reload(const SslContextBuilder& builder) {
  SslContext fresh = builder.build();
  auto next = fresh.state();
  if (next->server != cell_->server) {
    throw SslError(cell_->server ? "reload: a server context cannot become a client context"
                                 : "reload: a client context cannot become a server context");
  }
  const auto previous = cell_->get();
  // Tickets issued before the reload stay readable; the new context's own keys were never used.
  if (previous->ticket_keys && next->ticket_keys) next->ticket_keys = previous->ticket_keys;
  cell_->set(std::move(next));
}

void SslContext::rotate_session_ticket_keys() {
  const auto state = cell_->get();
  if (state->ticket_keys) state->ticket_keys->rotate();
}

std::size_t SslContext::session_ticket_keys() const {
  const auto state = cell_->get();
  return state->ticket_keys ? state->ticket_keys->size() : 0;
}

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
