// Url::parse: what a client accepts as a destination and what it refuses.
#include <doctest/doctest.h>

#include <string>

#include <trellis/codec/http/url.hpp>
#include <trellis/testing.hpp>

using namespace trellis;
using namespace trellis::http;

TEST_CASE("Url::parse splits host, port and target") {
  const Url u = Url::parse("http://127.0.0.1:8080/plaintext");
  CHECK(u.host == "127.0.0.1");
  CHECK(u.port == 8080);
  CHECK(u.target == "/plaintext");
  CHECK_FALSE(u.ipv6);
  CHECK(u.host_header() == "127.0.0.1:8080");
}

TEST_CASE("Url::parse: default port, empty path, query only, fragment dropped, scheme case") {
  const Url a = Url::parse("http://example.com");
  CHECK(a.host == "example.com");
  CHECK(a.port == 80);
  CHECK(a.target == "/");
  CHECK(a.host_header() == "example.com");
  CHECK(Url::parse("HTTP://example.com?x=1").target == "/?x=1");
  CHECK(Url::parse("http://example.com/a/b?x=1#frag").target == "/a/b?x=1");
  CHECK(Url::parse("http://example.com#frag").target == "/");
  CHECK(Url::parse("http://example.com:/p").port == 80);  // empty port: the default (RFC 3986)
  CHECK(Url::parse("http://example.com:80/p").host_header() == "example.com");
}

TEST_CASE("Url::parse keeps percent-encoding as written") {
  const Url u = Url::parse("http://h/a%20b/%2F?q=%7e");
  CHECK(u.target == "/a%20b/%2F?q=%7e");
  CHECK_THROWS_AS(Url::parse("http://h/a%2"), UrlError);
  CHECK_THROWS_AS(Url::parse("http://h/a%zz"), UrlError);
}

TEST_CASE("Url::parse takes IPv6 literals with and without a port") {
  const Url a = Url::parse("http://[::1]:9000/x");
  CHECK(a.host == "::1");
  CHECK(a.ipv6);
  CHECK(a.port == 9000);
  CHECK(a.host_header() == "[::1]:9000");
  const Url b = Url::parse("http://[2001:db8::7]");
  CHECK(b.host == "2001:db8::7");
  CHECK(b.port == 80);
  CHECK(b.target == "/");
  CHECK(b.host_header() == "[2001:db8::7]");
  CHECK(Url::parse("http://[::ffff:127.0.0.1]/").host == "::ffff:127.0.0.1");
}

TEST_CASE("Url::parse takes https URLs with port 443 by default") {
  const Url a = Url::parse("HTTPS://example.com/x?y");
  CHECK(a.https);
  CHECK(a.port == 443);
  CHECK(a.target == "/x?y");
  CHECK(a.host_header() == "example.com");
  const Url b = Url::parse("https://example.com:8443");
  CHECK(b.port == 8443);
  CHECK(b.host_header() == "example.com:8443");
  CHECK(b.scheme_prefix() == "https://");
  const Url c = Url::parse("http://example.com:443/");
  CHECK_FALSE(c.https);
  CHECK(c.host_header() == "example.com:443");
}

TEST_CASE("Url::parse refuses other schemes, userinfo and malformed authorities") {
  CHECK_THROWS_WITH_AS(Url::parse("ftp://example.com/"), doctest::Contains("https://"), UrlError);
  CHECK_THROWS_AS(Url::parse("ftp://example.com/"), UrlError);
  CHECK_THROWS_AS(Url::parse("example.com/"), UrlError);
  CHECK_THROWS_WITH_AS(Url::parse("http://user:pw@example.com/"), doctest::Contains("userinfo"),
                       UrlError);
  CHECK_THROWS_AS(Url::parse("http://@example.com/"), UrlError);
  CHECK_THROWS_AS(Url::parse("http:///path"), UrlError);
  CHECK_THROWS_AS(Url::parse("http://:80/"), UrlError);
  CHECK_THROWS_AS(Url::parse("http://h:0/"), UrlError);
  CHECK_THROWS_AS(Url::parse("http://h:65536/"), UrlError);
  CHECK_THROWS_AS(Url::parse("http://h:123456/"), UrlError);
  CHECK_THROWS_AS(Url::parse("http://h:8a/"), UrlError);
  CHECK_THROWS_AS(Url::parse("http://[::1/"), UrlError);
  CHECK_THROWS_AS(Url::parse("http://[]/"), UrlError);
  CHECK_THROWS_AS(Url::parse("http://[::1]x/"), UrlError);
  CHECK_THROWS_AS(Url::parse("http://[zz::1]/"), UrlError);
  CHECK_THROWS_AS(Url::parse("http://ex ample.com/"), UrlError);
  CHECK_THROWS_AS(Url::parse("http://h/a b"), UrlError);
  CHECK_THROWS_AS(Url::parse("http://h/a\r\nX: y"), UrlError);
  CHECK(Url::parse("http://h:65535/").port == 65535);
  // UrlError is an InvalidArgumentError, hence a trellis::Error.
  CHECK_THROWS_AS(Url::parse("nope"), Error);
}

TEST_CASE("Url::parse allocates nothing beyond the strings it returns") {
  if (!testing::allocation_hook_installed()) return;
  // Both strings fit the small-string buffer: no allocation at all.
  testing::AllocationScope scope;
  const Url u = Url::parse("http://127.0.0.1:8080/plaintext");
  CHECK(scope.count() == 0);
  CHECK(u.port == 8080);
  // A long target: one allocation, for that string only.
  testing::AllocationScope long_scope;
  const Url v = Url::parse("http://127.0.0.1:8080/a/rather/long/path/that/does/not/fit/inline");
  CHECK(long_scope.count() == 1);
  CHECK(v.target.size() > 15);
}

TEST_CASE("Url::host_header is sized exactly: a short one allocates nothing") {
  if (!testing::allocation_hook_installed()) return;
  const Url u = Url::parse("http://127.0.0.1:18191/plaintext");
  testing::AllocationScope scope;
  const std::string host = u.host_header();
  CHECK(scope.count() == 0);  // 15 characters: the small-string buffer
  CHECK(host == "127.0.0.1:18191");
  CHECK(Url::parse("http://[::1]:8080/").host_header() == "[::1]:8080");
  CHECK(Url::parse("https://example.com/").host_header() == "example.com");
  CHECK(Url::parse("https://example.com:80/").host_header() == "example.com:80");
}

TEST_CASE("Url::resolve: the examples of RFC 3986 §5.4") {
  const Url base = Url::parse("http://a/b/c/d;p?q");
  auto resolved = [&base](std::string_view reference) {
    const Url u = base.resolve(reference);
    return std::string(u.scheme_prefix()) + u.host_header() + u.target;
  };
  // §5.4.1, normal examples (a fragment is dropped: it is never sent).
  CHECK(resolved("g") == "http://a/b/c/g");
  CHECK(resolved("./g") == "http://a/b/c/g");
  CHECK(resolved("g/") == "http://a/b/c/g/");
  CHECK(resolved("/g") == "http://a/g");
  CHECK(resolved("//g") == "http://g/");
  CHECK(resolved("?y") == "http://a/b/c/d;p?y");
  CHECK(resolved("g?y") == "http://a/b/c/g?y");
  CHECK(resolved("#s") == "http://a/b/c/d;p?q");
  CHECK(resolved("g#s") == "http://a/b/c/g");
  CHECK(resolved("g?y#s") == "http://a/b/c/g?y");
  CHECK(resolved(";x") == "http://a/b/c/;x");
  CHECK(resolved("g;x") == "http://a/b/c/g;x");
  CHECK(resolved("g;x?y#s") == "http://a/b/c/g;x?y");
  CHECK(resolved("") == "http://a/b/c/d;p?q");
  CHECK(resolved(".") == "http://a/b/c/");
  CHECK(resolved("./") == "http://a/b/c/");
  CHECK(resolved("..") == "http://a/b/");
  CHECK(resolved("../") == "http://a/b/");
  CHECK(resolved("../g") == "http://a/b/g");
  CHECK(resolved("../..") == "http://a/");
  CHECK(resolved("../../") == "http://a/");
  CHECK(resolved("../../g") == "http://a/g");
  // §5.4.2, abnormal examples.
  CHECK(resolved("../../../g") == "http://a/g");
  CHECK(resolved("../../../../g") == "http://a/g");
  CHECK(resolved("/./g") == "http://a/g");
  CHECK(resolved("/../g") == "http://a/g");
  CHECK(resolved("g.") == "http://a/b/c/g.");
  CHECK(resolved(".g") == "http://a/b/c/.g");
  CHECK(resolved("g..") == "http://a/b/c/g..");
  CHECK(resolved("..g") == "http://a/b/c/..g");
  CHECK(resolved("./../g") == "http://a/b/g");
  CHECK(resolved("./g/.") == "http://a/b/c/g/");
  CHECK(resolved("g/./h") == "http://a/b/c/g/h");
  CHECK(resolved("g/../h") == "http://a/b/c/h");
  CHECK(resolved("g;x=1/./y") == "http://a/b/c/g;x=1/y");
  CHECK(resolved("g;x=1/../y") == "http://a/b/c/y");
  CHECK(resolved("g?y/./x") == "http://a/b/c/g?y/./x");
  CHECK(resolved("g?y/../x") == "http://a/b/c/g?y/../x");
  CHECK(resolved("g#s/./x") == "http://a/b/c/g");
  CHECK(resolved("g#s/../x") == "http://a/b/c/g");
  // Absolute URLs keep their own scheme, host and port; their dot segments go too.
  CHECK(resolved("https://other:8443/x/../y?z") == "https://other:8443/y?z");
  CHECK(base.resolve("//g:81/x").port == 81);
  CHECK(Url::parse("https://a/b").resolve("//g/").https);
  CHECK_THROWS_AS(base.resolve("ftp://a/b"), UrlError);
  CHECK_THROWS_AS(base.resolve("g h"), UrlError);
}
