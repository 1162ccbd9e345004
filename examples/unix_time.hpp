// UnixTime: the message of the time_server and time_client examples (Netty's TIME protocol): a
// point in time in seconds, sent on the wire as RFC 868 does (4 bytes, big-endian, seconds
// since 1900-01-01 00:00 UTC).
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

struct UnixTime {
  // Seconds from 1900-01-01 to 1970-01-01 (70 years, 17 of them leap years).
  static constexpr std::int64_t kSeconds1900To1970 = 2'208'988'800;

  std::int64_t seconds = 0;  // since 1970-01-01 00:00 UTC

  static UnixTime now() { return UnixTime{static_cast<std::int64_t>(std::time(nullptr))}; }
  static UnixTime from_rfc868(std::uint32_t value) {
    return UnixTime{static_cast<std::int64_t>(value) - kSeconds1900To1970};
  }
  std::uint32_t to_rfc868() const {
    return static_cast<std::uint32_t>(seconds + kSeconds1900To1970);
  }

  // "2026-12-05 11:52:00 UTC".
  std::string to_string() const {
    const auto t = static_cast<std::time_t>(seconds);
    std::tm utc{};
    gmtime_r(&t, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &utc);
    return text;
  }
};
