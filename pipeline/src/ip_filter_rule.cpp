// IpFilterRule (see ip_filter_rule.hpp).
#include <trellis/pipeline/ip_filter_rule.hpp>

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include <trellis/pipeline/error.hpp>

namespace trellis {

namespace {

constexpr std::uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

// Clears the bits of `bytes` below the first `prefix` bits.
void mask(std::uint8_t* bytes, std::size_t size, int prefix) {
  for (std::size_t i = 0; i < size; ++i) {
    const int keep = std::clamp(prefix - static_cast<int>(i) * 8, 0, 8);
    bytes[i] &= static_cast<std::uint8_t>(0xff00u >> keep);
  }
}

// True when the first `prefix` bits of a and b are equal.
bool prefix_equal(const std::uint8_t* a, const std::uint8_t* b, int prefix) {
  const int whole = prefix / 8;
  if (std::memcmp(a, b, static_cast<std::size_t>(whole)) != 0) return false;
  const int rest = prefix % 8;
  if (rest == 0) return true;
  const auto m = static_cast<std::uint8_t>(0xff00u >> rest);
  return (a[whole] & m) == (b[whole] & m);
}

}  // namespace

IpFilterRule::IpFilterRule(std::string_view cidr, IpFilterRuleType type) : type_(type) {
  const auto slash = cidr.find('/');
  if (slash == std::string_view::npos) {
    init(cidr, -1);
    return;
  }
  const std::string_view digits = cidr.substr(slash + 1);
  int prefix = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
  if (digits.empty() || digits.size() > 3 || digits.front() < '0' || digits.front() > '9' ||
      ec != std::errc() || end != digits.data() + digits.size()) {
    throw InvalidArgumentError("bad CIDR prefix: " + std::string(cidr));
  }
  init(cidr.substr(0, slash), prefix);
}

IpFilterRule::IpFilterRule(std::string_view ip, int prefix_length, IpFilterRuleType type)
    : type_(type) {
  if (prefix_length < 0) {
    throw InvalidArgumentError("negative prefix length: " + std::to_string(prefix_length));
  }
  init(ip, prefix_length);
}

void IpFilterRule::init(std::string_view ip, int prefix) {
  const std::string text(ip);
  if (inet_pton(AF_INET, text.c_str(), network_.data()) == 1) {
    ipv6_ = false;
  } else if (inet_pton(AF_INET6, text.c_str(), network_.data()) == 1) {
    ipv6_ = true;
  } else {
    throw InvalidArgumentError("not a numeric IP address: " + text);
  }
  const int bits = ipv6_ ? 128 : 32;
  if (prefix < 0) prefix = bits;  // an address alone
  if (prefix > bits) {
    throw InvalidArgumentError("prefix length " + std::to_string(prefix) + " out of range for " +
                               text);
  }
  if (ipv6_ && prefix >= 96 && std::memcmp(network_.data(), kMappedPrefix, 12) == 0) {
    // ::ffff:a.b.c.d/n (n >= 96) is the IPv4 rule a.b.c.d/(n - 96).
    std::memmove(network_.data(), network_.data() + 12, 4);
    std::fill(network_.begin() + 4, network_.end(), std::uint8_t{0});
    ipv6_ = false;
    prefix -= 96;
  }
  prefix_ = prefix;
  mask(network_.data(), ipv6_ ? 16 : 4, prefix_);
}

bool IpFilterRule::matches(const SocketAddress& address) const noexcept {
  if (address.kind() == SocketAddress::Kind::kIpv4) {
    if (ipv6_) return false;
    const auto* in = reinterpret_cast<const sockaddr_in*>(address.sockaddr_ptr());
    return prefix_equal(reinterpret_cast<const std::uint8_t*>(&in->sin_addr), network_.data(),
                        prefix_);
  }
  if (address.kind() == SocketAddress::Kind::kIpv6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address.sockaddr_ptr());
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&in6->sin6_addr);
    const bool mapped = std::memcmp(bytes, kMappedPrefix, 12) == 0;
    if (mapped) return !ipv6_ && prefix_equal(bytes + 12, network_.data(), prefix_);
    return ipv6_ && prefix_equal(bytes, network_.data(), prefix_);
  }
  return false;
}

std::string IpFilterRule::to_string() const {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(ipv6_ ? AF_INET6 : AF_INET, network_.data(), text, sizeof text);
  return std::string(text) + "/" + std::to_string(prefix_);
}

}  // namespace trellis
