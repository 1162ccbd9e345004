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

std::optional<std::time_t> parse_http_date(std::string_view text) {
  static constexpr std::string_view kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  // "Sun, 06 Nov 1994 08:49:37 GMT": 29 characters at fixed places.
  if (text.size() != 29 || text.substr(3, 2) != ", " || text[7] != ' ' || text[11] != ' ' ||
      text[16] != ' ' || text[19] != ':' || text[22] != ':' || text.substr(25) != " GMT") {
    return std::nullopt;
  }
  auto number = [&](std::size_t at, std::size_t digits) -> int {
    int n = 0;
    for (std::size_t i = at; i < at + digits; ++i) {
      if (text[i] < '0' || text[i] > '9') return -1;
      n = n * 10 + (text[i] - '0');
    }
    return n;
  };
  int wday = -1;
  for (int i = 0; i < 7; ++i) {
    if (text.substr(0, 3) == kDays[i]) wday = i;
  }
  int month = -1;
  for (int i = 0; i < 12; ++i) {
    if (text.substr(8, 3) == kMonths[i]) month = i;
  }
  const int day = number(5, 2);
  const int year = number(12, 4);
  const int hour = number(17, 2);
  const int minute = number(20, 2);
  const int second = number(23, 2);
  if (wday < 0 || month < 0 || day < 1 || day > 31 || year < 1900 || hour < 0 || hour > 23 ||
      minute < 0 || minute > 59 || second < 0 || second > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const std::time_t t = timegm(&tm);
  // timegm normalises: 31 Feb becomes 3 Mar. Such a date is not one.
  if (tm.tm_mday != day || tm.tm_mon != month) return std::nullopt;
  return t;
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
