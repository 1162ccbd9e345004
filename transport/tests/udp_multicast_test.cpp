// Multicast on the loopback interface: join_group/leave_group for IPv4 and IPv6, and delivery
// of a datagram sent to the group (IP_MULTICAST_IF lo, IP_MULTICAST_LOOP on, TTL 0 so nothing
// leaves the host). Each case probes the kernel with plain sockets first and asserts the
// channel does what the kernel allows: success where the probe succeeded, an IoError with the
// same errno where it failed.
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "udp_test_support.hpp"

using namespace trellis;
using namespace trellis::test;

namespace {

constexpr const char* kGroup4 = "239.255.77.1";
constexpr const char* kGroup6 = "ff15::7701";

struct Probe {
  int join_errno = 0;      // 0: the kernel let a socket join the group on lo
  bool delivered = false;  // a datagram sent to the group on lo came back
};

// Joins the group on lo with a plain socket and sends one datagram to it over lo.
Probe probe_multicast(int family, const char* group) {
  Probe probe;
  const unsigned lo = ::if_nametoindex("lo");
  REQUIRE(lo != 0);
  const int receiver = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const int sender = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(receiver >= 0);
  REQUIRE(sender >= 0);
  const auto any = SocketAddress::from_ip(family == AF_INET ? "0.0.0.0" : "::", 0);
  REQUIRE(::bind(receiver, any.sockaddr_ptr(), any.length()) == 0);
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  REQUIRE(::getsockname(receiver, reinterpret_cast<sockaddr*>(&ss), &len) == 0);
  const auto port = SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len).port();
  const auto to = SocketAddress::from_ip(group, port);
  int r;
  int zero = 0;
  int one = 1;
  if (family == AF_INET) {
    ip_mreqn join{};
    join.imr_multiaddr = reinterpret_cast<const sockaddr_in*>(to.sockaddr_ptr())->sin_addr;
    join.imr_ifindex = static_cast<int>(lo);
    r = ::setsockopt(receiver, IPPROTO_IP, IP_ADD_MEMBERSHIP, &join, sizeof join);
    ip_mreqn out{};
    out.imr_ifindex = static_cast<int>(lo);
    ::setsockopt(sender, IPPROTO_IP, IP_MULTICAST_IF, &out, sizeof out);
    ::setsockopt(sender, IPPROTO_IP, IP_MULTICAST_TTL, &zero, sizeof zero);
    ::setsockopt(sender, IPPROTO_IP, IP_MULTICAST_LOOP, &one, sizeof one);
  } else {
    ipv6_mreq join{};
    join.ipv6mr_multiaddr = reinterpret_cast<const sockaddr_in6*>(to.sockaddr_ptr())->sin6_addr;
    join.ipv6mr_interface = lo;
    r = ::setsockopt(receiver, IPPROTO_IPV6, IPV6_JOIN_GROUP, &join, sizeof join);
    int index = static_cast<int>(lo);
    ::setsockopt(sender, IPPROTO_IPV6, IPV6_MULTICAST_IF, &index, sizeof index);
    ::setsockopt(sender, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &zero, sizeof zero);
    ::setsockopt(sender, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &one, sizeof one);
  }
  if (r != 0) {
    probe.join_errno = errno;
  } else if (::sendto(sender, "probe", 5, 0, to.sockaddr_ptr(), to.length()) == 5) {
    pollfd p{receiver, POLLIN, 0};
    char buf[16];
    probe.delivered = ::poll(&p, 1, 1000) == 1 && ::recv(receiver, buf, sizeof buf, 0) == 5;
  }
  ::close(receiver);
  ::close(sender);
  return probe;
}

std::error_code io_error_code(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const IoError& e) {
    return e.code();
  } catch (...) {
  }
  return {};
}

void multicast_on_loopback(int family, const char* group) {
  const Probe probe = probe_multicast(family, group);
  EventLoopGroup loops(1);
  auto collector = std::make_shared<UdpCollector>();
  auto receiver = bind_udp(loops, collector, family == AF_INET ? "0.0.0.0" : "::");
  const auto group_address = SocketAddress::from_ip(group, receiver->local_address()->port());

  auto joined = receiver->join_group(group_address, "lo");
  REQUIRE(joined.wait_for(kUdpWait));
  if (probe.join_errno != 0) {
    MESSAGE("this kernel refuses to join " << std::string(group) << " on lo (errno "
                                           << probe.join_errno
                                           << "): checking the channel reports it cleanly");
    REQUIRE_FALSE(joined.is_success());
    CHECK(io_error_code(joined.cause()).value() == probe.join_errno);
    close_and_wait(*receiver);
    return;
  }
  REQUIRE(joined.is_success());

  if (probe.delivered) {
    Bootstrap options;
    options.option(channel_option::ip_multicast_if, std::string("lo"))
        .option(channel_option::ip_multicast_loop, true)
        .option(channel_option::ip_multicast_ttl, 0);
    auto sender = bind_udp(loops, std::make_shared<UdpCollector>(),
                           family == AF_INET ? "127.0.0.1" : "::1", options);
    auto sent = sender->new_promise();
    sender->write_and_flush(Message(DatagramPacket{udp_buf("to the group"), group_address, {}}),
                            sent);
    REQUIRE(sent.future().wait_for(kUdpWait));
    CHECK(sent.future().is_success());
    REQUIRE(collector->wait_for_count(1));
    CHECK(collector->received()[0].bytes == "to the group");
    CHECK(collector->received()[0].sender == *sender->local_address());
    close_and_wait(*sender);
  } else {
    MESSAGE("this kernel joins " << std::string(group)
                                 << " on lo but does not deliver to it over lo "
                                 << "(checked with plain sockets): delivery not tested");
  }

  auto left = receiver->leave_group(group_address, "lo");
  REQUIRE(left.wait_for(kUdpWait));
  CHECK(left.is_success());
  // Leaving a group the socket is not in is the kernel's error, reported as an IoError.
  auto left_again = receiver->leave_group(group_address, "lo");
  REQUIRE(left_again.wait_for(kUdpWait));
  REQUIRE_FALSE(left_again.is_success());
  CHECK(static_cast<bool>(io_error_code(left_again.cause())));
  close_and_wait(*receiver);
}

}  // namespace

TEST_CASE("an IPv4 datagram channel joins a multicast group on lo and receives from it") {
  multicast_on_loopback(AF_INET, kGroup4);
}

TEST_CASE("an IPv6 datagram channel joins and leaves a multicast group on lo") {
  if (!ipv6_loopback_available()) {
    MESSAGE("skipped: this machine cannot bind UDP to ::1");
    return;
  }
  multicast_on_loopback(AF_INET6, kGroup6);
}

TEST_CASE("joining on an interface that does not exist fails with IoError") {
  EventLoopGroup loops(1);
  auto ch = bind_udp(loops, std::make_shared<UdpCollector>());
  auto joined = ch->join_group(SocketAddress::from_ip(kGroup4, 0), "no-such-if0");
  REQUIRE(joined.wait_for(kUdpWait));
  REQUIRE_FALSE(joined.is_success());
  CHECK(static_cast<bool>(io_error_code(joined.cause())));
  // A group that is not a multicast address: the kernel says EINVAL.
  auto unicast = ch->join_group(SocketAddress::from_ip("127.0.0.1", 0), "lo");
  REQUIRE(unicast.wait_for(kUdpWait));
  REQUIRE_FALSE(unicast.is_success());
  CHECK(static_cast<bool>(io_error_code(unicast.cause())));
  CHECK(ch->is_open());
  close_and_wait(*ch);
}
