// StreamingHttpResponse: a response head whose body is read piece by piece as it arrives
// (`while (auto chunk = co_await response.body().next()) ...`), back-pressured: the connection
// reads no further than a few chunks ahead of the reader (see HttpBodyStream).
#pragma once

#include <memory>
#include <optional>
#include <utility>

#include <trellis/codec/http/http_body_stream.hpp>
#include <trellis/codec/http/http_message.hpp>

namespace trellis::http {

/// The reading end of a response body. Move-only; destroying it before the end of the body
/// closes the connection, which is then not reused.
class HttpResponseBody {
 public:
  /// An empty body: next() yields std::nullopt at once.
  HttpResponseBody() = default;
  /// The body read from stream.
  explicit HttpResponseBody(std::shared_ptr<HttpBodyStream> stream) : stream_(std::move(stream)) {}
  /// @name Moving
  ///@{

  /// Moving hands the body over; assigning abandons the body this one held.
  HttpResponseBody(HttpResponseBody&&) noexcept = default;
  HttpResponseBody& operator=(HttpResponseBody&& other) noexcept {
    if (this != &other) {
      release();
      stream_ = std::move(other.stream_);
    }
    return *this;
  }
  ///@}
  /// Abandons the body if it was not read to the end (the connection closes).
  ~HttpResponseBody() { release(); }

  /// The next chunk of the body, std::nullopt after the last. Fails with the error that cut the
  /// body short (ConnectionClosedError, codec::DecoderError, ...). One next() at a time.
  Future<std::optional<ByteBuf>> next() {
    if (!stream_) return make_ready_future<std::optional<ByteBuf>>(std::nullopt);
    return stream_->next();
  }

 private:
  void release() noexcept {
    if (!stream_) return;
    try {
      std::exchange(stream_, nullptr)->abandon();
    } catch (...) {
      // The loop is gone (shut down): so is the connection.
    }
  }
  std::shared_ptr<HttpBodyStream> stream_;
};

/// A response head whose body is read piece by piece as it arrives, back-pressured (see
/// HttpClient::request_streaming). Move-only, like its body.
struct StreamingHttpResponse {
  HttpVersion version = kHttp11;  ///< The protocol version.
  HttpResponseStatus status;      ///< The status.
  HttpHeaders headers;            ///< The header fields.

  /// The body, read with `co_await body().next()` until std::nullopt.
  HttpResponseBody& body() noexcept { return body_; }

  /// Internal: the body (use body()).
  HttpResponseBody body_;
};

}  // namespace trellis::http
