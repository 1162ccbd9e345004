#include "openssl_errors.hpp"

#include <openssl/err.h>

namespace trellis::ssl::detail {

std::string openssl_error_text(const std::string& what) {
  std::string text = what;
  bool first = true;
  while (const unsigned long code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    text += first ? ": " : "; ";
    text += buf;
    first = false;
  }
  return text;
}

}  // namespace trellis::ssl::detail
