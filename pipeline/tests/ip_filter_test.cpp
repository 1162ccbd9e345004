// Tests of IpFilterRule, IpSubnetFilter and UniqueIpFilter on embedded channels with IP remote
// addresses: CIDR parsing, IPv4 and IPv6 matching, IPv4-mapped addresses, rule order, the
// default action, removal once accepted, nothing reaching later handlers of a rejected channel,
// the rejection hook's write before the close, and unique IPs released on close.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/pipeline/ip_filter_rule.hpp>
#include <trellis/pipeline/ip_subnet_filter.hpp>
#include <trellis/pipeline/unique_ip_filter.hpp>
#include <trellis/testing/doctest_helpers.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;

namespace {

// Records what reaches it.
class Recorder : public ChannelInboundHandler {
 public:
  void channel_active(ChannelHandlerContext& ctx) override {
    ++active;
    ctx.fire_channel_active();
  }
  void channel_inactive(ChannelHandlerContext& ctx) override {
    ++inactive;
    ctx.fire_channel_inactive();
  }
  void channel_read(ChannelHandlerContext& /*ctx*/, Message msg) override {
    reads.push_back(msg.get<ByteBuf>().to_string());
  }
  int active = 0;
  int inactive = 0;
  std::vector<std::string> reads;
};

// A channel connected from ip:port with these handlers, registered (so active) afterwards, the
// way an accepted channel knows its peer before channel_active.
std::shared_ptr<EmbeddedChannel> channel_from(const std::string& ip, std::uint16_t port,
                                              std::shared_ptr<ChannelHandler> filter,
                                              std::shared_ptr<ChannelHandler> next = nullptr) {
  auto ch = next ? EmbeddedChannel::create(EmbeddedChannel::Options{.register_channel = false},
                                           std::move(filter), std::move(next))
                 : EmbeddedChannel::create(EmbeddedChannel::Options{.register_channel = false},
                                           std::move(filter));
  ch->connect(SocketAddress::from_ip(ip, port));
  ch->register_channel();
  return ch;
}

bool accepted(IpSubnetFilter& filter, const std::string& ip) {
  return filter.accepts(SocketAddress::from_ip(ip, 1234));
}

constexpr auto kAccept = IpFilterRuleType::kAccept;
constexpr auto kReject = IpFilterRuleType::kReject;

}  // namespace

TEST_CASE("IpFilterRule parses CIDR text and clears host bits") {
  CHECK(IpFilterRule("10.0.0.0/8", kAccept).to_string() == "10.0.0.0/8");
  CHECK(IpFilterRule("10.1.2.3/8", kAccept).to_string() == "10.0.0.0/8");
  CHECK(IpFilterRule("192.168.1.77/30", kAccept).to_string() == "192.168.1.76/30");
  CHECK(IpFilterRule("1.2.3.4", kAccept).to_string() == "1.2.3.4/32");
  CHECK(IpFilterRule("0.0.0.0/0", kAccept).to_string() == "0.0.0.0/0");
  CHECK(IpFilterRule("2001:db8:1:2::5/32", kAccept).to_string() == "2001:db8::/32");
  CHECK(IpFilterRule("::1", kAccept).to_string() == "::1/128");
  CHECK(IpFilterRule("2001:db8::", 33, kReject).to_string() == "2001:db8::/33");
  CHECK(IpFilterRule("2001:db8::", 33, kReject).rule_type() == kReject);
  // A mapped rule of /96 or more is the IPv4 rule it denotes.
  const IpFilterRule mapped("::ffff:10.9.8.7/104", kAccept);
  CHECK_FALSE(mapped.is_ipv6());
  CHECK(mapped.to_string() == "10.0.0.0/8");
  for (const char* bad : {"10.0.0.0/33", "::/129", "10.0.0/8", "10.0.0.0/", "10.0.0.0/-1",
                          "10.0.0.0/8x", "host.example/8", "", "/8", "10.0.0.0/0008"}) {
    const std::string text = bad;
    CAPTURE(text);
    CHECK_THROWS_AS(IpFilterRule(text, kAccept), InvalidArgumentError);
  }
  CHECK_THROWS_AS(IpFilterRule("10.0.0.0", -1, kAccept), InvalidArgumentError);
  CHECK_THROWS_AS(IpFilterRule("10.0.0.0", 33, kAccept), InvalidArgumentError);
}

TEST_CASE("IpFilterRule matches IPv4, IPv6 and IPv4-mapped IPv6 addresses") {
  const IpFilterRule v4("10.0.0.0/8", kAccept);
  const IpFilterRule odd("192.168.1.76/30", kAccept);
  const IpFilterRule v6("2001:db8::/32", kAccept);
  const IpFilterRule all4("0.0.0.0/0", kAccept);
  const IpFilterRule all6("::/0", kAccept);
  auto at = [](const char* ip) { return SocketAddress::from_ip(ip, 80); };
  CHECK(v4.matches(at("10.0.0.1")));
  CHECK(v4.matches(at("10.255.255.255")));
  CHECK_FALSE(v4.matches(at("11.0.0.1")));
  CHECK_FALSE(v4.matches(at("9.255.255.255")));
  CHECK(odd.matches(at("192.168.1.76")));
  CHECK(odd.matches(at("192.168.1.79")));
  CHECK_FALSE(odd.matches(at("192.168.1.80")));
  CHECK_FALSE(odd.matches(at("192.168.1.75")));
  CHECK(v6.matches(at("2001:db8::1")));
  CHECK(v6.matches(at("2001:db8:ffff:ffff::")));
  CHECK_FALSE(v6.matches(at("2001:db9::1")));
  // Mapped addresses count as IPv4, for IPv4 rules only.
  CHECK(v4.matches(at("::ffff:10.1.2.3")));
  CHECK_FALSE(v4.matches(at("::ffff:11.1.2.3")));
  CHECK_FALSE(all6.matches(at("::ffff:10.1.2.3")));
  CHECK(all4.matches(at("::ffff:10.1.2.3")));
  // Families do not cross otherwise.
  CHECK_FALSE(v4.matches(at("::a00:1")));  // 10.0.0.1 in the low bits, not mapped
  CHECK_FALSE(v6.matches(at("10.0.0.1")));
  CHECK_FALSE(all6.matches(at("10.0.0.1")));
  CHECK(all6.matches(at("::1")));
  // Non-IP addresses match nothing.
  CHECK_FALSE(all4.matches(SocketAddress::embedded("x")));
  CHECK_FALSE(all6.matches(SocketAddress::from_unix_path("/tmp/s")));
  CHECK_FALSE(all4.matches(SocketAddress()));
}

TEST_CASE("IpSubnetFilter: the first matching rule decides") {
  IpSubnetFilter reject_first(
      {IpFilterRule("10.1.0.0/16", kReject), IpFilterRule("10.0.0.0/8", kAccept)}, false);
  CHECK_FALSE(accepted(reject_first, "10.1.2.3"));
  CHECK(accepted(reject_first, "10.2.0.1"));
  CHECK_FALSE(accepted(reject_first, "192.168.0.1"));  // no rule: the default (reject here)
  IpSubnetFilter accept_first(
      {IpFilterRule("10.0.0.0/8", kAccept), IpFilterRule("10.1.0.0/16", kReject)}, false);
  CHECK(accepted(accept_first, "10.1.2.3"));
  CHECK(accepted(accept_first, "10.2.0.1"));
}

TEST_CASE("IpSubnetFilter: the default action when no rule matches") {
  IpSubnetFilter by_default({IpFilterRule("10.0.0.0/8", kReject)});
  CHECK(by_default.accept_if_not_found());
  CHECK(accepted(by_default, "192.168.0.1"));
  CHECK(accepted(by_default, "::1"));
  CHECK_FALSE(accepted(by_default, "10.0.0.1"));
  CHECK_FALSE(accepted(by_default, "::ffff:10.0.0.1"));
  IpSubnetFilter closed({IpFilterRule("2001:db8::/32", kAccept)}, false);
  CHECK(accepted(closed, "2001:db8::42"));
  CHECK_FALSE(accepted(closed, "2001:db9::42"));
  CHECK_FALSE(accepted(closed, "127.0.0.1"));
  CHECK_FALSE(closed.accepts(SocketAddress::embedded("embedded")));
  CHECK(IpSubnetFilter({}).accepts(SocketAddress::embedded("embedded")));
}

TEST_CASE("IpSubnetFilter: an accepted channel goes on without the filter") {
  auto filter = std::make_shared<IpSubnetFilter>(
      std::vector<IpFilterRule>{IpFilterRule("127.0.0.0/8", kAccept)}, false);
  auto rec = std::make_shared<Recorder>();
  auto ch = channel_from("127.0.0.1", 40000, filter, rec);
  CHECK(ch->is_active());
  CHECK(rec->active == 1);
  CHECK(ch->pipeline().first() == rec);  // the filter removed itself
  ch->write_inbound(ByteBuf::from("hello"));
  CHECK(rec->reads == std::vector<std::string>{"hello"});
  ch->close();
  CHECK(rec->inactive == 1);
}

TEST_CASE("IpSubnetFilter: a rejected channel is closed before later handlers see anything") {
  auto filter = std::make_shared<IpSubnetFilter>(
      std::vector<IpFilterRule>{IpFilterRule("2001:db8::/32", kReject)});
  auto rec = std::make_shared<Recorder>();
  auto ch = channel_from("2001:db8::7", 40000, filter, rec);
  CHECK_FALSE(ch->is_open());
  CHECK(rec->active == 0);
  CHECK(rec->inactive == 0);
  CHECK(rec->reads.empty());
}

TEST_CASE("IpSubnetFilter is sharable: one filter for many channels") {
  auto filter = std::make_shared<IpSubnetFilter>(
      std::vector<IpFilterRule>{IpFilterRule("::ffff:0.0.0.0/96", kReject)});
  CHECK(filter->is_sharable());
  auto a = channel_from("::ffff:127.0.0.1", 1, filter);
  auto b = channel_from("::1", 2, filter);
  auto c = channel_from("127.0.0.1", 3, filter);
  CHECK_FALSE(a->is_open());
  CHECK(b->is_open());
  CHECK_FALSE(c->is_open());
}

namespace {

// Answers a rejected client before the close, and says whether it was asked.
class PoliteFilter : public IpSubnetFilter {
 public:
  using IpSubnetFilter::IpSubnetFilter;
  int rejected = 0;
  std::string rejected_ip;

 protected:
  std::optional<Future<void>> channel_rejected(ChannelHandlerContext& ctx,
                                               const SocketAddress& remote) override {
    ++rejected;
    rejected_ip = remote.ip();
    ChannelPromise written = ctx.new_promise();
    ctx.write_and_flush(ByteBuf::from("go away\n"), written);
    return written.future();
  }
};

}  // namespace

TEST_CASE("IpSubnetFilter: channel_rejected writes, and the close waits for that write") {
  auto filter = std::make_shared<PoliteFilter>(
      std::vector<IpFilterRule>{IpFilterRule("192.0.2.0/24", kReject)});
  auto rec = std::make_shared<Recorder>();
  auto ch =
      EmbeddedChannel::create(EmbeddedChannel::Options{.register_channel = false}, filter, rec);
  ch->connect(SocketAddress::from_ip("192.0.2.9", 5555));
  ch->set_outbound_byte_budget(3);  // a slow peer: the answer takes a while to go out
  ch->register_channel();
  CHECK(filter->rejected == 1);
  CHECK(filter->rejected_ip == "192.0.2.9");
  CHECK(ch->is_open());  // the answer is still going out
  // Input meanwhile goes nowhere.
  ch->write_inbound(ByteBuf::from("sneaky"));
  CHECK(rec->reads.empty());
  CHECK(rec->active == 0);
  ch->add_outbound_byte_budget(100);
  ch->run_pending_tasks();
  CHECK_FALSE(ch->is_open());
  std::string out;
  while (auto b = ch->read_outbound<ByteBuf>()) out += b->to_string();
  CHECK(out == "go away\n");
}

TEST_CASE("IpSubnetFilter: channel_rejected is not called for accepted channels") {
  auto filter = std::make_shared<PoliteFilter>(std::vector<IpFilterRule>{});
  auto ch = channel_from("192.0.2.9", 5555, filter);
  CHECK(filter->rejected == 0);
  CHECK(ch->is_open());
  CHECK_FALSE(ch->read_outbound<ByteBuf>());
}

TEST_CASE("UniqueIpFilter: one open channel per IP, released on close") {
  auto filter = std::make_shared<UniqueIpFilter>();
  CHECK(filter->is_sharable());
  auto rec = std::make_shared<Recorder>();
  auto first = channel_from("10.0.0.1", 1000, filter);
  CHECK(first->is_open());
  CHECK(filter->is_connected("10.0.0.1"));
  // Another port of the same IP, and the same IP mapped into IPv6: rejected.
  auto second = channel_from("10.0.0.1", 1001, filter, rec);
  CHECK_FALSE(second->is_open());
  CHECK(rec->active == 0);
  auto mapped = channel_from("::ffff:10.0.0.1", 1002, filter);
  CHECK_FALSE(mapped->is_open());
  // Other IPs are independent.
  auto other = channel_from("10.0.0.2", 1000, filter);
  auto v6 = channel_from("2001:db8::1", 1000, filter);
  CHECK(other->is_open());
  CHECK(v6->is_open());
  CHECK(filter->connected_count() == 3);
  // A rejected channel's close does not release the IP of the accepted one.
  CHECK(filter->is_connected("10.0.0.1"));
  first->close();
  first->run_pending_tasks();
  CHECK_FALSE(filter->is_connected("10.0.0.1"));
  CHECK(filter->connected_count() == 2);
  auto again = channel_from("::ffff:10.0.0.1", 1003, filter);
  CHECK(again->is_open());
  CHECK(filter->is_connected("10.0.0.1"));
}

TEST_CASE("UniqueIpFilter: channels without an IP are accepted and not counted") {
  auto filter = std::make_shared<UniqueIpFilter>();
  EmbeddedChannel a{filter};
  EmbeddedChannel b{filter};
  CHECK(a.is_open());
  CHECK(b.is_open());
  CHECK(filter->connected_count() == 0);
}

// The code of the "IP filtering" section of docs/handlers.md (checked by docs.ip_filter_snippets).
namespace docs {

class TellThemWhy : public IpSubnetFilter {
 public:
  using IpSubnetFilter::IpSubnetFilter;

 protected:
  std::optional<Future<void>> channel_rejected(ChannelHandlerContext& ctx,
                                               const SocketAddress& remote) override {
    ChannelPromise written = ctx.new_promise();
    ctx.write_and_flush(ByteBuf::from("no service for " + remote.ip() + "\n"), written);
    return written.future();  // the channel is closed once the answer is out
  }
};

void init_channel(Channel& ch) {
  // Shared by every channel of the server, on every loop.
  static const auto subnets = std::make_shared<TellThemWhy>(
      std::vector<IpFilterRule>{IpFilterRule("10.1.0.0/16", IpFilterRuleType::kReject),
                                IpFilterRule("10.0.0.0/8", IpFilterRuleType::kAccept),
                                IpFilterRule("2001:db8::/32", IpFilterRuleType::kAccept)},
      /*accept_if_not_found=*/false);
  static const auto one_per_ip = std::make_shared<UniqueIpFilter>();
  ch.pipeline().add_last(subnets);
  ch.pipeline().add_last(one_per_ip);
  // ... decoders and the application's handlers
}

}  // namespace docs

TEST_CASE("docs/handlers.md: IP filtering") {
  auto make = [](const char* ip, std::uint16_t port) {
    auto ch = EmbeddedChannel::create(EmbeddedChannel::Options{.register_channel = false});
    docs::init_channel(*ch);
    ch->connect(SocketAddress::from_ip(ip, port));
    ch->register_channel();
    return ch;
  };
  auto inside = make("10.2.3.4", 1);
  CHECK(inside->is_open());
  CHECK(inside->pipeline().first() == nullptr);  // both filters left
  auto again = make("::ffff:10.2.3.4", 2);
  CHECK_FALSE(again->is_open());  // one channel per IP
  auto lab = make("10.1.0.9", 1);
  CHECK_FALSE(lab->is_open());
  auto answer = lab->read_outbound<ByteBuf>();
  REQUIRE(answer);
  CHECK(answer->to_string() == "no service for 10.1.0.9\n");
  auto v6 = make("2001:db8::10", 1);
  CHECK(v6->is_open());
  auto outside = make("192.0.2.1", 1);
  CHECK_FALSE(outside->is_open());
  inside->close();
  CHECK(make("10.2.3.4", 3)->is_open());
}
