// trellis::ssl in one include: TLS contexts, the SslHandler and its errors.
#pragma once

#include <trellis/ssl/peer_certificate.hpp>
#include <trellis/ssl/ssl_context.hpp>
#include <trellis/ssl/ssl_context_builder.hpp>
#include <trellis/ssl/ssl_error.hpp>
#include <trellis/ssl/ssl_handler.hpp>
#include <trellis/ssl/verify_callback.hpp>

/// TLS on OpenSSL 3: SslContextBuilder, SslHandler and their errors.
namespace trellis::ssl {}
