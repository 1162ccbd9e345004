// The HTTP/1.x message objects that travel through a pipeline: a head (HttpRequest or
// HttpResponse), then zero or more HttpContent chunks, then one LastHttpContent (with trailers);
// or, after an HttpObjectAggregator, one FullHttpRequest / FullHttpResponse.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <trellis/codec/http/http_headers.hpp>
#include <trellis/pipeline/byte_buf.hpp>

namespace trellis::http {

/// An HTTP/1.x protocol version.
struct HttpVersion {
  std::uint8_t major = 1;  ///< The major version (1).
  std::uint8_t minor = 1;  ///< The minor version (0 or 1).
  /// Same major and minor.
  constexpr bool operator==(const HttpVersion&) const = default;
  /// "HTTP/1.0" or "HTTP/1.1", as on the wire.
  std::string_view text() const noexcept { return minor == 0 ? "HTTP/1.0" : "HTTP/1.1"; }
};
/// HTTP/1.0.
inline constexpr HttpVersion kHttp10{1, 0};
/// HTTP/1.1.
inline constexpr HttpVersion kHttp11{1, 1};

/// A request method: the standard ones are compared as ids, extension methods by name.
class HttpMethod {
 public:
  /// The standard methods; kOther is an extension method, told apart by its name.
  enum Id : std::uint8_t {
    kGet,      ///< GET
    kHead,     ///< HEAD
    kPost,     ///< POST
    kPut,      ///< PUT
    kDelete,   ///< DELETE
    kConnect,  ///< CONNECT
    kOptions,  ///< OPTIONS
    kTrace,    ///< TRACE
    kPatch,    ///< PATCH
    kOther     ///< An extension method (see name()).
  };

  /// GET.
  HttpMethod() = default;
  /// A standard method (implicit, so `HttpMethod::kPost` converts).
  HttpMethod(Id id) : id_(id) {}  // NOLINT(google-explicit-constructor)
  /// Parses a method token (case-sensitive, as RFC 9110 says). Any string is kept as it is; the
  /// request encoder refuses one that is not a token (EncoderError, nothing written).
  static HttpMethod of(std::string_view token);

  /// The method's id (kOther for an extension method).
  Id id() const noexcept { return id_; }
  /// The method's token, e.g. "GET".
  std::string_view name() const noexcept;
  /// Same id and, for extension methods, the same name.
  bool operator==(const HttpMethod& o) const noexcept {
    return id_ == o.id_ && (id_ != kOther || name() == o.name());
  }
  /// True when this is the standard method id.
  bool operator==(Id id) const noexcept { return id_ == id; }

 private:
  Id id_ = kGet;
  // The name of an extension method (rare): shared, so that moving a request (which happens a
  // few times on its way through a pipeline) moves a pointer rather than a string.
  std::shared_ptr<const std::string> other_;
};

/// The head of a request.
struct HttpRequest {
  HttpMethod method;              ///< The method.
  std::string target;             ///< The request-target as received.
  HttpVersion version = kHttp11;  ///< The protocol version.
  HttpHeaders headers;            ///< The header fields.
};

/// A status code with its reason phrase.
struct HttpResponseStatus {
  std::uint16_t code = 200;  ///< The status code.
  std::string reason;        ///< The reason phrase; empty: the standard phrase of code.
  /// reason, or the standard phrase of code when reason is empty.
  std::string_view reason_phrase() const noexcept;
};
/// The standard reason phrase of code ("" when unknown).
std::string_view reason_phrase(std::uint16_t code) noexcept;

/// The head of a response.
struct HttpResponse {
  HttpVersion version = kHttp11;  ///< The protocol version.
  HttpResponseStatus status;      ///< The status.
  HttpHeaders headers;            ///< The header fields.
};

/// The trailer fields of a chunked body: usually none, so they are allocated on first use and the
/// common LastHttpContent stays small enough to travel inline in a Message.
class TrailerFields {
 public:
  /// No fields (nothing allocated).
  TrailerFields() noexcept = default;
  /// @name Copying and moving
  ///@{

  /// A copy copies the fields; a move moves the pointer.
  TrailerFields(TrailerFields&&) noexcept = default;
  TrailerFields& operator=(TrailerFields&&) noexcept = default;
  TrailerFields(const TrailerFields& o)
      : fields_(o.fields_ ? std::make_unique<HttpHeaders>(*o.fields_) : nullptr) {}
  TrailerFields& operator=(const TrailerFields& o) {
    if (this != &o) fields_ = o.fields_ ? std::make_unique<HttpHeaders>(*o.fields_) : nullptr;
    return *this;
  }
  ///@}

  /// The fields for adding to (allocated on first use).
  HttpHeaders& mutate() {
    if (!fields_) fields_ = std::make_unique<HttpHeaders>();
    return *fields_;
  }
  /// The fields (an empty set when there are none).
  const HttpHeaders& operator*() const noexcept { return fields_ ? *fields_ : empty_fields(); }
  /// The fields, as a pointer (never null).
  const HttpHeaders* operator->() const noexcept { return &**this; }
  /// True when there is no field.
  bool empty() const noexcept { return !fields_ || fields_->empty(); }

 private:
  static const HttpHeaders& empty_fields() noexcept;
  std::unique_ptr<HttpHeaders> fields_;
};

/// A piece of a message body.
struct HttpContent {
  ByteBuf content;  ///< The bytes of the piece.
};

/// The end of a message body, with the trailer fields of a chunked body.
struct LastHttpContent {
  ByteBuf content;         ///< The last bytes of the body (often empty).
  TrailerFields trailers;  ///< The trailer fields (chunked bodies only).
};

/// A whole request: head and body in one message (see HttpObjectAggregator).
struct FullHttpRequest {
  HttpMethod method;              ///< The method.
  std::string target;             ///< The request-target as received.
  HttpVersion version = kHttp11;  ///< The protocol version.
  HttpHeaders headers;            ///< The header fields.
  ByteBuf content;                ///< The whole body.
  TrailerFields trailers;         ///< The trailer fields of a chunked body.
};

/// A whole response: head and body in one message.
struct FullHttpResponse {
  HttpVersion version = kHttp11;  ///< The protocol version.
  HttpResponseStatus status;      ///< The status.
  HttpHeaders headers;            ///< The header fields.
  ByteBuf content;                ///< The whole body.
  TrailerFields trailers;         ///< The trailer fields, sent with a chunked body.
};

/// Keep-alive per RFC 9112 §9.3: HTTP/1.1 persists unless "Connection: close"; HTTP/1.0 persists
/// only with "Connection: keep-alive".
bool is_keep_alive(HttpVersion version, const HttpHeaders& headers) noexcept;

}  // namespace trellis::http
