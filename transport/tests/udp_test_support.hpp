// Helpers of the UDP transport tests: an echo handler, a collecting handler that waits for a
// count of datagrams, self-checking payloads (sequence number + pattern + checksum) and
// bootstrap shortcuts for channels on ephemeral loopback ports.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <trellis/transport.hpp>

namespace trellis::test {

using namespace std::chrono_literals;
constexpr auto kUdpWait = 10s;

// Sends each datagram back to where it came from; flushes once per read batch.
class UdpEchoHandler final : public ChannelInboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    auto packet = msg.take<DatagramPacket>();
    ctx.write(Message(packet.reply(std::move(packet.content))));
  }
  void channel_read_complete(ChannelHandlerContext& ctx) override { ctx.flush(); }
  // A datagram error does not end the exchange.
  void exception_caught(ChannelHandlerContext&, std::exception_ptr) override {}
};

// Collects the datagrams (and errors) a channel reads; tests wait for a count of them.
class UdpCollector final : public ChannelInboundHandler {
 public:
  struct Received {
    std::string bytes;
    SocketAddress sender;
    SocketAddress recipient;
  };

  void channel_read(ChannelHandlerContext&, Message msg) override {
    auto packet = msg.take<DatagramPacket>();
    const auto span = packet.content.readable_span();
    Received r{std::string(reinterpret_cast<const char*>(span.data()), span.size()), packet.sender,
               packet.recipient};
    std::lock_guard lock(mutex_);
    received_.push_back(std::move(r));
    changed_.notify_all();
  }
  void exception_caught(ChannelHandlerContext&, std::exception_ptr error) override {
    std::lock_guard lock(mutex_);
    errors_.push_back(error);
    changed_.notify_all();
  }

  // Waits until at least n datagrams arrived (false on timeout).
  bool wait_for_count(std::size_t n, std::chrono::milliseconds timeout = kUdpWait) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return received_.size() >= n; });
  }
  bool wait_for_errors(std::size_t n, std::chrono::milliseconds timeout = kUdpWait) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return errors_.size() >= n; });
  }
  std::size_t count() {
    std::lock_guard lock(mutex_);
    return received_.size();
  }
  std::vector<Received> received() {
    std::lock_guard lock(mutex_);
    return received_;
  }
  std::vector<std::exception_ptr> errors() {
    std::lock_guard lock(mutex_);
    return errors_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Received> received_;
  std::vector<std::exception_ptr> errors_;
};

// A payload that proves itself: sequence number (4 bytes, big-endian), then bytes derived from
// it, then a 4-byte FNV-1a checksum of everything before. Sizes vary with the sequence number.
inline std::uint32_t fnv1a(const char* data, std::size_t n) {
  std::uint32_t h = 2166136261u;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 16777619u;
  }
  return h;
}

inline std::string make_payload(std::uint32_t seq, std::size_t max_body = 500) {
  const std::size_t body = 1 + (seq * 7919u) % max_body;
  std::string s(4 + body + 4, '\0');
  for (int i = 0; i < 4; ++i)
    s[static_cast<std::size_t>(i)] = static_cast<char>(seq >> (24 - 8 * i));
  for (std::size_t i = 0; i < body; ++i) s[4 + i] = static_cast<char>((seq * 31u + i * 17u) & 0xff);
  const std::uint32_t sum = fnv1a(s.data(), 4 + body);
  for (int i = 0; i < 4; ++i) {
    s[4 + body + static_cast<std::size_t>(i)] = static_cast<char>(sum >> (24 - 8 * i));
  }
  return s;
}

// The sequence number of a valid payload, or nullopt when it is corrupt.
inline std::optional<std::uint32_t> check_payload(const std::string& s) {
  if (s.size() < 9) return std::nullopt;
  std::uint32_t seq = 0;
  for (int i = 0; i < 4; ++i)
    seq = (seq << 8) | static_cast<unsigned char>(s[static_cast<std::size_t>(i)]);
  std::uint32_t sum = 0;
  for (std::size_t i = s.size() - 4; i < s.size(); ++i)
    sum = (sum << 8) | static_cast<unsigned char>(s[i]);
  if (fnv1a(s.data(), s.size() - 4) != sum) return std::nullopt;
  if (s != make_payload(seq)) return std::nullopt;  // the pattern, and the size, too
  return seq;
}

inline ByteBuf udp_buf(const std::string& s) { return ByteBuf::from(std::string_view(s)); }

// A DatagramChannel bound to host on an ephemeral port with the handler (and options).
inline std::shared_ptr<DatagramChannel> bind_udp(EventLoopGroup& group,
                                                 std::shared_ptr<ChannelHandler> handler,
                                                 const std::string& host = "127.0.0.1",
                                                 Bootstrap bootstrap = Bootstrap()) {
  auto f =
      bootstrap.group(group).channel<DatagramChannel>().handler(std::move(handler)).bind(host, 0);
  REQUIRE(f.wait_for(kUdpWait));
  REQUIRE(f.is_success());
  auto ch = std::static_pointer_cast<DatagramChannel>(f.get());
  REQUIRE(ch->local_address().has_value());
  REQUIRE(ch->local_address()->port() != 0);
  return ch;
}

// Whether this machine can bind a UDP socket to ::1.
inline bool ipv6_loopback_available() {
  const int fd = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_addr = in6addr_loopback;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  ::close(fd);
  return ok;
}

// Runs fn on the channel's loop and waits for its result.
template <class Fn>
auto on_loop(Channel& ch, Fn fn) {
  auto f = ch.event_loop().submit(std::move(fn));
  REQUIRE(f.wait_for(kUdpWait));
  return f.get();
}

inline void close_and_wait(Channel& ch) {
  ch.close();
  CHECK(ch.close_future().wait_for(kUdpWait));
}

}  // namespace trellis::test
