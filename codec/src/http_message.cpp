// Methods, reason phrases and keep-alive rules of HTTP/1.x messages (see http_message.hpp).
#include <trellis/codec/http/http_message.hpp>

#include <array>

namespace trellis::http {

namespace {
constexpr std::array<std::string_view, HttpMethod::kOther> kMethodNames = {
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"};
}

HttpMethod HttpMethod::of(std::string_view token) {
  // Length and first letter first: only the one likely match is compared in full (mostly GET).
  if (!token.empty()) {
    for (std::size_t i = 0; i < kMethodNames.size(); ++i) {
      const std::string_view name = kMethodNames[i];
      if (name.size() == token.size() && name[0] == token[0] && name == token) {
        return HttpMethod(static_cast<Id>(i));
      }
    }
  }
  HttpMethod m(kOther);
  m.other_ = std::make_shared<const std::string>(token);
  return m;
}

std::string_view HttpMethod::name() const noexcept {
  if (id_ != kOther) return kMethodNames[id_];
  return other_ ? std::string_view(*other_) : std::string_view();
}

std::string_view reason_phrase(std::uint16_t code) noexcept {
  switch (code) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 417:
      return "Expectation Failed";
    case 426:
      return "Upgrade Required";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "";
  }
}

std::string_view HttpResponseStatus::reason_phrase() const noexcept {
  return reason.empty() ? http::reason_phrase(code) : std::string_view(reason);
}

const HttpHeaders& TrailerFields::empty_fields() noexcept {
  static const HttpHeaders kEmpty;
  return kEmpty;
}

bool is_keep_alive(HttpVersion version, const HttpHeaders& headers) noexcept {
  if (headers.contains_token(HeaderId::kConnection, "close")) return false;
  if (version == kHttp11) return true;
  return headers.contains_token(HeaderId::kConnection, "keep-alive");
}

}  // namespace trellis::http
