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

struct HttpVersion {
  std::uint8_t major = 1;
  std::uint8_t minor = 1;
  constexpr bool operator==(const HttpVersion&) const = default;
  std::string_view text() const noexcept { return minor == 0 ? "HTTP/1.0" : "HTTP/1.1"; }
};
inline constexpr HttpVersion kHttp10{1, 0};
inline constexpr HttpVersion kHttp11{1, 1};

// A request method: the standard ones are compared as ids, extension methods by name.
class HttpMethod {
 public:
  enum Id : std::uint8_t {
    kGet,
    kHead,
    kPost,
    kPut,
    kDelete,
    kConnect,
    kOptions,
    kTrace,
    kPatch,
    kOther
  };

  HttpMethod() = default;
  HttpMethod(Id id) : id_(id) {}  // NOLINT(google-explicit-constructor)
  // Parses a method token (case-sensitive, as RFC 9110 says).
  static HttpMethod of(std::string_view token);

  Id id() const noexcept { return id_; }
  std::string_view name() const noexcept;
  bool operator==(const HttpMethod& o) const noexcept {
    return id_ == o.id_ && (id_ != kOther || name() == o.name());
  }
  bool operator==(Id id) const noexcept { return id_ == id; }

 private:
  Id id_ = kGet;
  // The name of an extension method (rare): shared, so that moving a request (which happens a
  // few times on its way through a pipeline) moves a pointer rather than a string.
  std::shared_ptr<const std::string> other_;
};

// The head of a request.
struct HttpRequest {
  HttpMethod method;
  std::string target;  // the request-target as received
  HttpVersion version = kHttp11;
  HttpHeaders headers;
};

// A status code with its reason phrase.
struct HttpResponseStatus {
  std::uint16_t code = 200;
  std::string reason;  // empty: the standard phrase of code
  std::string_view reason_phrase() const noexcept;
};
// The standard reason phrase of code ("" when unknown).
std::string_view reason_phrase(std::uint16_t code) noexcept;

// The head of a response.
struct HttpResponse {
  HttpVersion version = kHttp11;
  HttpResponseStatus status;
  HttpHeaders headers;
};

// The trailer fields of a chunked body: usually none, so they are allocated on first use and the
// common LastHttpContent stays small enough to travel inline in a Message.
class TrailerFields {
 public:
  TrailerFields() noexcept = default;
  TrailerFields(TrailerFields&&) noexcept = default;
  TrailerFields& operator=(TrailerFields&&) noexcept = default;
  TrailerFields(const TrailerFields& o)
      : fields_(o.fields_ ? std::make_unique<HttpHeaders>(*o.fields_) : nullptr) {}
  TrailerFields& operator=(const TrailerFields& o) {
    if (this != &o) fields_ = o.fields_ ? std::make_unique<HttpHeaders>(*o.fields_) : nullptr;
    return *this;
  }

  // The fields for adding to (allocated on first use).
  HttpHeaders& mutate() {
    if (!fields_) fields_ = std::make_unique<HttpHeaders>();
    return *fields_;
  }
  // The fields (an empty set when there are none).
  const HttpHeaders& operator*() const noexcept { return fields_ ? *fields_ : empty_fields(); }
  const HttpHeaders* operator->() const noexcept { return &**this; }
  bool empty() const noexcept { return !fields_ || fields_->empty(); }

 private:
  static const HttpHeaders& empty_fields() noexcept;
  std::unique_ptr<HttpHeaders> fields_;
};

// A piece of a message body.
struct HttpContent {
  ByteBuf content;
};

// The end of a message body, with the trailer fields of a chunked body.
struct LastHttpContent {
  ByteBuf content;
  TrailerFields trailers;
};

// A whole request: head and body in one message (see HttpObjectAggregator).
struct FullHttpRequest {
  HttpMethod method;
  std::string target;
  HttpVersion version = kHttp11;
  HttpHeaders headers;
  ByteBuf content;
  TrailerFields trailers;
};

// A whole response: head and body in one message.
struct FullHttpResponse {
  HttpVersion version = kHttp11;
  HttpResponseStatus status;
  HttpHeaders headers;
  ByteBuf content;
  TrailerFields trailers;
};

// Keep-alive per RFC 9112 §9.3: HTTP/1.1 persists unless "Connection: close"; HTTP/1.0 persists
// only with "Connection: keep-alive".
bool is_keep_alive(HttpVersion version, const HttpHeaders& headers) noexcept;

}  // namespace trellis::http
