// SslContext: the immutable, shareable TLS configuration (an OpenSSL SSL_CTX) that SslHandlers
// are made from. One context serves any number of connections on any number of threads; it is
// built by SslContextBuilder.
#pragma once

#include <cstddef>
#include <memory>

typedef struct ssl_ctx_st SSL_CTX;  // NOLINT(modernize-use-using): OpenSSL's own declaration

namespace trellis::ssl {

namespace detail {
struct SslContextState;
}

class SslContext {
 public:
  /// True for a context from SslContextBuilder::for_server().
  bool is_server() const noexcept;
  /// The OpenSSL context, for settings the builder does not offer. Changing it after handlers were
  /// made from it affects only handlers made afterwards.
  SSL_CTX* native_handle() const noexcept;

  /// Client contexts: sessions kept for resumption (one per server name).
  std::size_t cached_sessions() const;

  const std::shared_ptr<detail::SslContextState>& state() const noexcept { return state_; }

 private:
  friend class SslContextBuilder;
  explicit SslContext(std::shared_ptr<detail::SslContextState> state) noexcept
      : state_(std::move(state)) {}

  std::shared_ptr<detail::SslContextState> state_;
};

}  // namespace trellis::ssl
