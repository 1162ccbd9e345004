// UniqueIpFilter: at most one open channel per client IP (Netty's UniqueIpFilter); a second
// channel from an IP that already has one is rejected.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include <trellis/pipeline/remote_address_filter.hpp>

namespace trellis {

/// At most one open channel per client IP: a channel whose remote IP already has an open channel
/// is rejected (see RemoteAddressFilter); the IP is released when the accepted channel closes.
/// The port does not count, and an IPv4-mapped IPv6 address counts as its IPv4 address. Channels
/// without an IP remote address (Unix-domain, embedded) are accepted and not counted.
///
/// Sharable, and meant to be shared: one filter for every channel of a server, from every loop
/// (the set of IPs is guarded by a mutex).
class UniqueIpFilter : public RemoteAddressFilter {
 public:
  UniqueIpFilter();

  /// How many IPs have an open channel now.
  std::size_t connected_count() const;
  /// True when `ip` ("10.0.0.1", "::1") has an open channel.
  bool is_connected(const std::string& ip) const;

  /// True: meant to be shared.
  bool is_sharable() const noexcept override { return true; }

 protected:
  /// Claims remote's IP; false when it is taken.
  bool accept(ChannelHandlerContext& ctx, const SocketAddress& remote) override;

 private:
  struct Connected {
    mutable std::mutex mutex;
    std::set<std::string> ips;
  };
  // Shared with the close listeners, which may outlive the filter.
  std::shared_ptr<Connected> connected_;
};

}  // namespace trellis
