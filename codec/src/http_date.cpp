// HTTP dates and the per-thread Date cache (see http_date.hpp).
#include <trellis/codec/http/http_date.hpp>

#include <chrono>
#include <cstdio>

namespace trellis::http {

std::string format_http_date(std::time_t t) {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday],
                tm.tm_mday, kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                tm.tm_sec);
  return buf;
}

std::string_view HttpDateCache::field_line(std::int64_t now_nanos) {
  if (now_nanos >= next_refresh_nanos_) {
    line_ =
        "Date: " +
        format_http_date(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())) +
        "\r\n";
    next_refresh_nanos_ = now_nanos + 1'000'000'000;
  }
  return line_;
}

HttpDateCache& HttpDateCache::for_this_thread() {
  thread_local HttpDateCache cache;
  return cache;
}

}  // namespace trellis::http
