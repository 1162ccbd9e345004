// IpSubnetFilter: accepts or rejects channels by their remote IP against a list of subnet rules
// (Netty's IpSubnetFilter / RuleBasedIpFilter): the first matching rule decides.
#pragma once

#include <vector>

#include <trellis/pipeline/ip_filter_rule.hpp>
#include <trellis/pipeline/remote_address_filter.hpp>

namespace trellis {

/// Accepts or rejects channels by their remote IP (see RemoteAddressFilter for when and how):
/// the first rule that matches decides; when none does, the channel is accepted if
/// accept_if_not_found (the default, as Netty), else rejected. A channel without an IP remote
/// address (Unix-domain, embedded) matches no rule.
///
/// Sharable: one filter can serve every channel of a server, from every loop (the rules are
/// immutable). Override channel_rejected to answer before the close.
class IpSubnetFilter : public RemoteAddressFilter {
 public:
  /// A filter with these rules, tried in order.
  explicit IpSubnetFilter(std::vector<IpFilterRule> rules, bool accept_if_not_found = true);

  /// The rules, in order.
  const std::vector<IpFilterRule>& rules() const noexcept { return rules_; }
  /// The decision when no rule matches.
  bool accept_if_not_found() const noexcept { return accept_if_not_found_; }
  /// The decision for `remote` (what accept() answers).
  bool accepts(const SocketAddress& remote) const noexcept;

  /// True: the rules are immutable.
  bool is_sharable() const noexcept override { return true; }

 protected:
  /// accepts(remote).
  bool accept(ChannelHandlerContext& ctx, const SocketAddress& remote) override;

 private:
  std::vector<IpFilterRule> rules_;
  bool accept_if_not_found_;
};

}  // namespace trellis
