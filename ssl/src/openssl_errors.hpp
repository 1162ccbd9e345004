// Turns OpenSSL's thread-local error queue into the text of a trellis::ssl error.
#pragma once

#include <string>

namespace trellis::ssl::detail {

// Drains the error queue: "what: reason[; reason...]" ("what" alone when the queue was empty).
std::string openssl_error_text(const std::string& what);

}  // namespace trellis::ssl::detail
