// SocketAddress: IPv4/IPv6 stored inline, Unix-domain (and unknown families) in a shared heap
// block; conversions from and to sockaddr, copies, equality.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>

#include <trellis/pipeline/error.hpp>
#include <trellis/pipeline/socket_address.hpp>

using namespace trellis;

TEST_CASE("a SocketAddress is small: two fit a connection cheaply") {
  CHECK(sizeof(SocketAddress) <= 96);
}

TEST_CASE("IPv4 and IPv6 addresses round-trip through sockaddr") {
  const auto v4 = SocketAddress::from_ip("127.0.0.1", 8080);
  CHECK(v4.kind() == SocketAddress::Kind::kIpv4);
  CHECK(v4.length() == sizeof(sockaddr_in));
  CHECK(v4.sockaddr_ptr()->sa_family == AF_INET);
  CHECK(ntohs(reinterpret_cast<const sockaddr_in*>(v4.sockaddr_ptr())->sin_port) == 8080);
  CHECK(v4.to_string() == "127.0.0.1:8080");
  const auto v4_back = SocketAddress::from_sockaddr(v4.sockaddr_ptr(), v4.length());
  CHECK(v4_back == v4);
  CHECK(v4_back.port() == 8080);

  const auto v6 = SocketAddress::from_ip("[::1]", 443);
  CHECK(v6.kind() == SocketAddress::Kind::kIpv6);
  CHECK(v6.length() == sizeof(sockaddr_in6));
  CHECK(v6.to_string() == "[::1]:443");
  const auto v6_back = SocketAddress::from_sockaddr(v6.sockaddr_ptr(), v6.length());
  CHECK(v6_back == v6);
  CHECK(v6_back.ip() == "::1");
  CHECK_FALSE(v6_back == v4);

  // A length beyond the sockaddr_in6 (as from a sockaddr_storage) is kept as given.
  sockaddr_storage ss{};
  std::memcpy(&ss, v6.sockaddr_ptr(), sizeof(sockaddr_in6));
  const auto wide = SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), sizeof ss);
  CHECK(wide.kind() == SocketAddress::Kind::kIpv6);
  CHECK(wide.length() == sizeof ss);
  CHECK(wide.port() == 443);
  CHECK(wide == v6);
}

TEST_CASE("Unix-domain addresses keep their path and sockaddr across copies") {
  const auto a = SocketAddress::from_unix_path("/tmp/trellis.sock");
  CHECK(a.kind() == SocketAddress::Kind::kUnix);
  CHECK(a.path() == "/tmp/trellis.sock");
  CHECK(a.to_string() == "unix:/tmp/trellis.sock");
  const auto* un = reinterpret_cast<const sockaddr_un*>(a.sockaddr_ptr());
  CHECK(un->sun_family == AF_UNIX);
  CHECK(std::string(un->sun_path) == "/tmp/trellis.sock");
  CHECK(a.length() == offsetof(sockaddr_un, sun_path) + a.path().size() + 1);

  SocketAddress copy = a;
  CHECK(copy == a);
  CHECK(std::string(reinterpret_cast<const sockaddr_un*>(copy.sockaddr_ptr())->sun_path) ==
        "/tmp/trellis.sock");
  const auto back = SocketAddress::from_sockaddr(a.sockaddr_ptr(), a.length());
  CHECK(back == a);
  CHECK(back.path() == "/tmp/trellis.sock");

  CHECK_THROWS_AS(SocketAddress::from_unix_path(std::string(200, 'x')), InvalidArgumentError);
}

TEST_CASE("an unknown family keeps its bytes; none and embedded have no sockaddr") {
  sockaddr_storage ss{};
  ss.ss_family = AF_APPLETALK;
  reinterpret_cast<unsigned char*>(&ss)[20] = 0x5a;
  const auto odd = SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), 24);
  CHECK(odd.kind() == SocketAddress::Kind::kNone);
  CHECK(odd.length() == 24);
  CHECK(odd.sockaddr_ptr()->sa_family == AF_APPLETALK);
  CHECK(reinterpret_cast<const unsigned char*>(odd.sockaddr_ptr())[20] == 0x5a);

  const SocketAddress none;
  CHECK(none.length() == 0);
  CHECK(none.to_string() == "none");
  CHECK(none.sockaddr_ptr()->sa_family == 0);
  CHECK(SocketAddress::from_sockaddr(nullptr, 0) == none);

  const auto e = SocketAddress::embedded("test");
  CHECK(e.length() == 0);
  CHECK(e.to_string() == "embedded:test");
  CHECK(e == SocketAddress::embedded("test"));
}
