// IpSubnetFilter (see ip_subnet_filter.hpp).
#include <trellis/pipeline/ip_subnet_filter.hpp>

#include <utility>

namespace trellis {

IpSubnetFilter::IpSubnetFilter(std::vector<IpFilterRule> rules, bool accept_if_not_found)
    : rules_(std::move(rules)), accept_if_not_found_(accept_if_not_found) {}

bool IpSubnetFilter::accepts(const SocketAddress& remote) const noexcept {
  for (const IpFilterRule& rule : rules_) {
    if (rule.matches(remote)) return rule.rule_type() == IpFilterRuleType::kAccept;
  }
  return accept_if_not_found_;
}

bool IpSubnetFilter::accept(ChannelHandlerContext& /*ctx*/, const SocketAddress& remote) {
  return accepts(remote);
}

}  // namespace trellis
