// Channel id generation and formatting (see channel_id.hpp).
#include <trellis/pipeline/channel_id.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>

namespace trellis {

namespace {
std::atomic<std::uint64_t> g_next_id{1};

std::uint64_t process_random() noexcept {
  static const std::uint64_t value = [] {
    auto x =
        static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    x ^= static_cast<std::uint64_t>(::getpid()) << 32;
    // splitmix64 finaliser
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }();
  return value;
}

std::uint32_t mix32(std::uint64_t v) noexcept {
  v = (v ^ (v >> 33)) * 0xff51afd7ed558ccdULL;
  v = (v ^ (v >> 33)) * 0xc4ceb9fe1a85ec53ULL;
  return static_cast<std::uint32_t>(v ^ (v >> 33));
}
}  // namespace

ChannelId ChannelId::next() noexcept {
  return ChannelId(g_next_id.fetch_add(1, std::memory_order_relaxed));
}

std::string ChannelId::as_short_text() const {
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%08x", mix32(value_ ^ process_random()));
  return buf;
}

std::string ChannelId::as_long_text() const {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%08x-%016llx-%08x", static_cast<unsigned>(::getpid()),
                static_cast<unsigned long long>(value_),
                static_cast<unsigned>(process_random() & 0xffffffffU));
  return buf;
}

}  // namespace trellis
