// Validation of HTTP/2 request header lists (RFC 9113 §8.2, §8.3): what makes a request malformed
// (a stream error PROTOCOL_ERROR), and the content-length a request declares.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <trellis/codec/http2/http2_headers.hpp>

namespace trellis::http2 {

/// Checks a request's header list: names in lower case and made of token characters, values
/// without NUL, CR, LF or surrounding white space, pseudo-headers first (:method, :scheme,
/// :path, :authority only, each at most once; :method always, :scheme and a non-empty :path
/// unless CONNECT, :authority and neither of the others for CONNECT), no connection-specific
/// field (connection, keep-alive, proxy-connection, transfer-encoding, upgrade), te only
/// "trailers", content-length a decimal number. Returns why it is malformed, or nothing.
std::optional<std::string_view> validate_request_headers(const Http2Headers& headers) noexcept;

/// Checks a trailer section: the field rules of validate_request_headers() and no pseudo-header.
std::optional<std::string_view> validate_trailers(const Http2Headers& headers) noexcept;

/// The value of the content-length fields of `headers`: nothing when there is none, -1 when it
/// is not a decimal number (or several fields disagree).
std::optional<std::int64_t> content_length_of(const Http2Headers& headers) noexcept;

}  // namespace trellis::http2
