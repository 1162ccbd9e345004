// IpFilterRule: an IPv4 or IPv6 subnet in CIDR form (10.0.0.0/8, 2001:db8::/32) with an accept or
// reject decision, as used by IpSubnetFilter (Netty's IpSubnetFilterRule).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <trellis/pipeline/socket_address.hpp>

namespace trellis {

/// What a matching rule decides.
enum class IpFilterRuleType {
  kAccept,  ///< The channel is accepted.
  kReject   ///< The channel is rejected (closed).
};

/// An IPv4 or IPv6 subnet with an accept or reject decision (Netty's IpSubnetFilterRule).
///
/// An IPv4 rule matches IPv4 addresses and IPv4-mapped IPv6 addresses (\::ffff:a.b.c.d, what a
/// dual-stack socket reports for an IPv4 peer). An IPv6 rule matches the other IPv6 addresses. A
/// rule written as a mapped address with a prefix of 96 or more (\::ffff:10.0.0.0/104) is the
/// IPv4 rule it denotes (10.0.0.0/8). Host bits below the prefix are ignored (10.1.2.3/8 is
/// 10.0.0.0/8). Non-IP addresses (Unix-domain, embedded) match no rule.
///
/// Threading: an immutable value; const use from any thread.
class IpFilterRule {
 public:
  /// From CIDR text: "10.0.0.0/8", "2001:db8::/32", or an address alone (a /32 or /128 rule).
  /// InvalidArgumentError for anything else (a bad address, a prefix out of range).
  IpFilterRule(std::string_view cidr, IpFilterRuleType type);
  /// From an address and a prefix length (0-32 for IPv4, 0-128 for IPv6); InvalidArgumentError
  /// otherwise.
  IpFilterRule(std::string_view ip, int prefix_length, IpFilterRuleType type);

  /// True when `address` is an IP address inside the subnet.
  bool matches(const SocketAddress& address) const noexcept;
  /// Accept or reject.
  IpFilterRuleType rule_type() const noexcept { return type_; }
  /// True for an IPv6 rule.
  bool is_ipv6() const noexcept { return ipv6_; }
  /// The prefix length (after turning a mapped IPv6 rule into IPv4).
  int prefix_length() const noexcept { return prefix_; }
  /// The subnet in CIDR form ("10.0.0.0/8", "2001:db8::/32").
  std::string to_string() const;

 private:
  void init(std::string_view ip, int prefix_length);

  std::array<std::uint8_t, 16> network_{};  // the first 4 bytes for IPv4, host bits cleared
  int prefix_ = 0;
  bool ipv6_ = false;
  IpFilterRuleType type_;
};

}  // namespace trellis
