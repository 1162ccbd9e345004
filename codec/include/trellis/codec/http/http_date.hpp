// HTTP dates (RFC 9110 §5.6.7, IMF-fixdate) and a per-thread cache of the current one, refreshed
// at most once a second of the executor's clock, for the Date header of responses.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

namespace trellis {
class EventExecutor;
}

namespace trellis::http {

/// "Sun, 06 Nov 1994 08:49:37 GMT"
std::string format_http_date(std::time_t t);
/// The time of an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), or nullopt for anything else
/// (RFC 9110 §13.1.3: a conditional with an invalid date is ignored). The obsolete RFC 850 and
/// asctime forms are not accepted (they are ignored, which only costs a full response).
std::optional<std::time_t> parse_http_date(std::string_view text);

class HttpDateCache {
 public:
  /// The current date, recomputed when a second (on now_nanos, the caller's executor clock) has
  /// passed since the last computation. The view stays valid until the next call.
  std::string_view get(std::int64_t now_nanos) {
    const auto line = field_line(now_nanos);  // "Date: " + date + "\r\n"
    return line.substr(6, line.size() - 8);
  }
  /// The same date as a whole field line: "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n".
  std::string_view field_line(std::int64_t now_nanos);
  /// The calling thread's cache (each loop thread has its own).
  static HttpDateCache& for_this_thread();

 private:
  std::int64_t next_refresh_nanos_ = INT64_MIN;
  std::string line_;
};

}  // namespace trellis::http
