// The errors of trellis::ssl: SslError for a TLS failure after the handshake (a bad record, an
// unexpected alert, a truncated stream) and SslHandshakeError for a failed handshake, with
// OpenSSL's reason text and the certificate verification result.
#pragma once

#include <string>

#include <trellis/pipeline/error.hpp>

namespace trellis::ssl {

/// A TLS failure: a bad record, an unexpected alert, a truncated stream, or a context that could
/// not be built; what() carries OpenSSL's reason.
class SslError : public Error {
 public:
  using Error::Error;
};

/// The handshake failed. verify_result() is OpenSSL's X509_V_* code of the peer's certificate
/// check (0, X509_V_OK, when the failure was not about the certificate).
class SslHandshakeError : public SslError {
 public:
  /// A failed handshake, described by `what`, with the certificate check's result and its text.
  explicit SslHandshakeError(const std::string& what, long verify_result = 0,
                             std::string verify_result_text = {})
      : SslError(what),
        verify_result_(verify_result),
        verify_result_text_(std::move(verify_result_text)) {}

  /// OpenSSL's X509_V_* code of the peer's certificate check (0: not about the certificate).
  long verify_result() const noexcept { return verify_result_; }
  /// X509_verify_cert_error_string of verify_result(), e.g. "hostname mismatch"; the reason a
  /// verify callback gave when it refused the peer (X509_V_ERR_APPLICATION_VERIFICATION).
  const std::string& verify_result_text() const noexcept { return verify_result_text_; }

 private:
  long verify_result_;
  std::string verify_result_text_;
};

/// The peer closed the connection after the handshake without sending close_notify: the data
/// received may have been cut short by an attacker, so this is not a clean end of stream.
class SslTruncationError : public SslError {
 public:
  SslTruncationError() : SslError("TLS stream truncated: the peer closed without close_notify") {}
  using SslError::SslError;
};

}  // namespace trellis::ssl
