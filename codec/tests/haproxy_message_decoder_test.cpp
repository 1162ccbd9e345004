// HAProxyMessageDecoder: PROXY protocol version 1 and 2 headers decoded (addresses, ports,
// TLVs, CRC32C), the bytes after them passed on unchanged, the decoder gone; malformed headers,
// oversized ones and slow ones refused with the connection closed and nothing passed on.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <trellis/codec/decoder_error.hpp>
#include <trellis/codec/haproxy/haproxy_message_decoder.hpp>
#include <trellis/pipeline.hpp>
#include <trellis/testing.hpp>

using namespace trellis;
using namespace trellis::codec;
using namespace std::chrono_literals;

namespace {

std::shared_ptr<EmbeddedChannel> channel(HAProxyDecoderOptions options = {}) {
  return EmbeddedChannel::create(std::make_shared<HAProxyMessageDecoder>(options));
}

ByteBuf bytes(const std::string& s) { return ByteBuf::from(s); }

// Everything that reached the tail, as one string.
std::string passed_on(EmbeddedChannel& ch) {
  std::string s;
  while (auto m = ch.read_inbound<ByteBuf>()) {
    const auto span = m->readable_span();
    s.append(reinterpret_cast<const char*>(span.data()), span.size());
  }
  return s;
}

HAProxyMessage event_of(EmbeddedChannel& ch) {
  REQUIRE(ch.user_events().size() == 1);
  auto& event = ch.user_events().front();
  REQUIRE(event.is<HAProxyMessage>());
  return event.get<HAProxyMessage>();
}

// The decoder refused: the error reached the tail, the channel is closed, nothing passed on.
template <class E = DecoderError>
void check_refused(EmbeddedChannel& ch, const std::string& input) {
  CAPTURE(input);
  try {
    ch.write_inbound(bytes(input));
  } catch (const E&) {
  }
  CHECK_FALSE(ch.is_open());
  CHECK(ch.inbound_messages().empty());
  CHECK(ch.user_events().empty());
  REQUIRE_FALSE(ch.exceptions().empty());
  CHECK_THROWS_AS(std::rethrow_exception(ch.exceptions().front()), E);
}

std::string be16(std::uint16_t v) {
  return {static_cast<char>(v >> 8), static_cast<char>(v & 0xFF)};
}

std::string tlv(std::uint8_t type, const std::string& value) {
  return std::string(1, static_cast<char>(type)) + be16(static_cast<std::uint16_t>(value.size())) +
         value;
}

const std::string kSig("\r\n\r\n\0\r\nQUIT\n", 12);

// A version 2 header: version/command byte, family byte, then body (addresses and TLVs).
std::string v2(std::uint8_t ver_cmd, std::uint8_t family, const std::string& body) {
  return kSig + std::string(1, static_cast<char>(ver_cmd)) +
         std::string(1, static_cast<char>(family)) + be16(static_cast<std::uint16_t>(body.size())) +
         body;
}

std::string ipv4_block() {  // 192.0.2.1:56324 -> 198.51.100.2:443
  return std::string("\xC0\x00\x02\x01", 4) + std::string("\xC6\x33\x64\x02", 4) + be16(56324) +
         be16(443);
}

// CRC-32C the slow way, for the test's own headers.
std::uint32_t crc32c(const std::string& data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

// A PROXY TCP4 header with a CRC32C TLV, its checksum right (or wrong).
std::string v2_with_crc(bool right) {
  const std::string zero_crc = tlv(HAProxyTlv::kCrc32c, std::string(4, '\0'));
  std::string header = v2(0x21, 0x11, ipv4_block() + tlv(HAProxyTlv::kAlpn, "h2") + zero_crc);
  std::uint32_t crc = crc32c(header) ^ (right ? 0u : 1u);
  const std::size_t at = header.size() - 4;
  for (int i = 0; i < 4; ++i) header[at + i] = static_cast<char>(crc >> (24 - 8 * i));
  return header;
}

}  // namespace

// --- docs/codecs.md, "The PROXY protocol" ---------------------------------------------------
// First in the pipeline of each accepted connection, before TLS.
void add_proxy_protocol(trellis::Channel& ch) {
  ch.pipeline().add_last("proxy-protocol",
                         std::make_shared<trellis::codec::HAProxyMessageDecoder>());
}

// Later, in any handler: the client's address as the load balancer saw it ("" when the header
// gave none: a health check of the balancer itself, or an UNKNOWN connection).
std::string proxied_client(const trellis::Channel& ch) {
  const auto* header = ch.attr(trellis::codec::haproxy_message_key());
  return header != nullptr ? header->source() : std::string();
}
// ---------------------------------------------------------------------------------------------

TEST_CASE("docs/codecs.md: the PROXY protocol") {
  auto ch = EmbeddedChannel::create(EmbeddedChannel::Options{.register_channel = false});
  add_proxy_protocol(*ch);
  ch->register_channel();
  CHECK(proxied_client(*ch).empty());
  ch->write_inbound(bytes("PROXY TCP6 2001:db8::7 2001:db8::1 40000 443\r\nbody"));
  CHECK(proxied_client(*ch) == "[2001:db8::7]:40000");
  CHECK(passed_on(*ch) == "body");
}

TEST_CASE("v1 TCP4: the message, the attribute, the bytes after it, and the decoder gone") {
  auto decoder = std::make_shared<HAProxyMessageDecoder>();
  auto ch = EmbeddedChannel::create(decoder);
  CHECK(ch->pipeline().context(*decoder) != nullptr);
  ch->write_inbound(bytes("PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\nGET / HTTP/1.1\r\n"));
  const HAProxyMessage m = event_of(*ch);
  CHECK(m.version == HAProxyProtocolVersion::kV1);
  CHECK(m.command == HAProxyCommand::kProxy);
  CHECK(m.protocol == HAProxyProxiedProtocol::kTcp4);
  CHECK(m.source_address == "192.0.2.1");
  CHECK(m.destination_address == "198.51.100.2");
  CHECK(m.source_port == 56324);
  CHECK(m.destination_port == 443);
  CHECK(m.source() == "192.0.2.1:56324");
  CHECK(m.destination() == "198.51.100.2:443");
  CHECK(passed_on(*ch) == "GET / HTTP/1.1\r\n");
  const auto* attr = ch->attr(haproxy_message_key());
  REQUIRE(attr != nullptr);
  CHECK(attr->source() == "192.0.2.1:56324");
  CHECK(ch->pipeline().context(*decoder) == nullptr);
  // Later bytes go straight on.
  ch->write_inbound(bytes("more"));
  CHECK(passed_on(*ch) == "more");
  CHECK(ch->is_open());
}

TEST_CASE("v1 TCP6 and UNKNOWN") {
  auto ch = channel();
  ch->write_inbound(bytes("PROXY TCP6 2001:db8::1 2001:db8::2 1 65535\r\n"));
  HAProxyMessage m = event_of(*ch);
  CHECK(m.protocol == HAProxyProxiedProtocol::kTcp6);
  CHECK(m.source() == "[2001:db8::1]:1");
  CHECK(m.destination() == "[2001:db8::2]:65535");

  auto unknown = channel();
  unknown->write_inbound(bytes("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\nabc"));
  m = event_of(*unknown);
  CHECK(m.protocol == HAProxyProxiedProtocol::kUnknown);
  CHECK(m.source().empty());
  CHECK(passed_on(*unknown) == "abc");
}

TEST_CASE("a header split across reads, byte by byte") {
  for (const std::string& header :
       {std::string("PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n"), v2_with_crc(true)}) {
    auto ch = channel();
    for (char c : header) {
      CHECK(ch->user_events().empty());
      ch->write_inbound(bytes(std::string(1, c)));
    }
    const HAProxyMessage m = event_of(*ch);
    CHECK(m.source() == "192.0.2.1:56324");
    ch->write_inbound(bytes("payload"));
    CHECK(passed_on(*ch) == "payload");
  }
}

TEST_CASE("v1: malformed lines are refused") {
  for (const char* line : {
           "PROXY TCP4 192.0.2.256 198.51.100.2 1 2\r\n",    // not an address
           "PROXY TCP4 192.0.2.1 2001:db8::1 1 2\r\n",       // the wrong family
           "PROXY TCP6 192.0.2.1 198.51.100.2 1 2\r\n",      // the wrong family
           "PROXY TCP4 192.0.2.1 198.51.100.2 0443 2\r\n",   // a leading zero
           "PROXY TCP4 192.0.2.1 198.51.100.2 65536 2\r\n",  // out of range
           "PROXY TCP4 192.0.2.1 198.51.100.2 -1 2\r\n",     // not a number
           "PROXY TCP4 192.0.2.1  198.51.100.2 1 2\r\n",     // two spaces
           "PROXY TCP4 192.0.2.1 198.51.100.2 1\r\n",        // a field missing
           "PROXY TCP4 192.0.2.1 198.51.100.2 1 2 3\r\n",    // one too many
           "PROXY UDP4 192.0.2.1 198.51.100.2 1 2\r\n",      // not a v1 protocol
           "PROXY TCP4 192.0.2.1 198.51.100.2 1 2\n",        // LF without CR
           "PROXY TCP4 192.0.2.1 198.51.100.2 1 2\rX",       // CR without LF
           "GET / HTTP/1.1\r\nHost: x\r\n\r\n",              // not PROXY at all
           "PROXY\r\n",                                      // "PROXY" without a space
       }) {
    auto ch = channel();
    check_refused(*ch, line);
  }
}

TEST_CASE("v1: a line over 107 bytes is refused without waiting for its end") {
  auto ch = channel();
  check_refused(*ch, "PROXY UNKNOWN " + std::string(93, 'x'));
  // 107 bytes with the CRLF is still fine.
  auto ok = channel();
  ok->write_inbound(bytes("PROXY UNKNOWN " + std::string(91, 'x') + "\r\n"));
  CHECK(event_of(*ok).protocol == HAProxyProxiedProtocol::kUnknown);
}

TEST_CASE("v2 TCP4 with TLVs: ALPN, authority, unique id, SSL with sub-fields, CRC32C") {
  std::string ssl_value = std::string("\x07", 1) + std::string(4, '\0') +
                          tlv(HAProxyTlv::kSslVersion, "TLSv1.3") +
                          tlv(HAProxyTlv::kSslCn, "client.example");
  const std::string zero_crc = tlv(HAProxyTlv::kCrc32c, std::string(4, '\0'));
  std::string header =
      v2(0x21, 0x11,
         ipv4_block() + tlv(HAProxyTlv::kAlpn, "h2") + tlv(HAProxyTlv::kAuthority, "example.com") +
             tlv(HAProxyTlv::kUniqueId, "id-1") + tlv(HAProxyTlv::kSsl, ssl_value) +
             tlv(0xE0, "custom") + zero_crc);
  const std::uint32_t crc = crc32c(header);
  for (int i = 0; i < 4; ++i)
    header[header.size() - 4 + i] = static_cast<char>(crc >> (24 - 8 * i));

  auto ch = channel();
  ch->write_inbound(bytes(header + "hello"));
  const HAProxyMessage m = event_of(*ch);
  CHECK(m.version == HAProxyProtocolVersion::kV2);
  CHECK(m.command == HAProxyCommand::kProxy);
  CHECK(m.protocol == HAProxyProxiedProtocol::kTcp4);
  CHECK(m.source() == "192.0.2.1:56324");
  CHECK(m.destination() == "198.51.100.2:443");
  REQUIRE(m.tlvs.size() == 6);
  CHECK(m.tlv(HAProxyTlv::kAlpn)->value == "h2");
  CHECK(m.tlv(HAProxyTlv::kAuthority)->value == "example.com");
  CHECK(m.tlv(HAProxyTlv::kUniqueId)->value == "id-1");
  CHECK(m.tlv(0xE0)->value == "custom");
  const auto ssl = m.ssl();
  REQUIRE(ssl.has_value());
  CHECK(ssl->is_ssl());
  CHECK(ssl->verify == 0);
  CHECK(ssl->get(HAProxyTlv::kSslVersion) == "TLSv1.3");
  CHECK(ssl->get(HAProxyTlv::kSslCn) == "client.example");
  CHECK_FALSE(ssl->get(HAProxyTlv::kSslCipher).has_value());
  CHECK(passed_on(*ch) == "hello");
}

TEST_CASE("v2 TCP6, UDP4, a Unix socket, UNSPEC and LOCAL") {
  const std::string a6 = std::string("\x20\x01\x0d\xb8", 4) + std::string(11, '\0') + "\x01";
  const std::string b6 = std::string("\x20\x01\x0d\xb8", 4) + std::string(11, '\0') + "\x02";
  auto ch = channel();
  ch->write_inbound(bytes(v2(0x21, 0x21, a6 + b6 + be16(1) + be16(2))));
  HAProxyMessage m = event_of(*ch);
  CHECK(m.protocol == HAProxyProxiedProtocol::kTcp6);
  CHECK(m.source() == "[2001:db8::1]:1");
  CHECK(m.destination() == "[2001:db8::2]:2");

  auto udp = channel();
  udp->write_inbound(bytes(v2(0x21, 0x12, ipv4_block())));
  CHECK(event_of(*udp).protocol == HAProxyProxiedProtocol::kUdp4);

  std::string src(108, '\0'), dst(108, '\0');
  src.replace(0, 14, "/run/client.sk");
  dst.replace(0, 14, "/run/server.sk");
  auto unix_ch = channel();
  unix_ch->write_inbound(bytes(v2(0x21, 0x31, src + dst)));
  m = event_of(*unix_ch);
  CHECK(m.protocol == HAProxyProxiedProtocol::kUnixStream);
  CHECK(m.source() == "/run/client.sk");
  CHECK(m.destination() == "/run/server.sk");

  auto unspec = channel();
  unspec->write_inbound(bytes(v2(0x21, 0x00, tlv(HAProxyTlv::kNoop, "xx")) + "z"));
  m = event_of(*unspec);
  CHECK(m.protocol == HAProxyProxiedProtocol::kUnknown);
  CHECK(m.tlvs.size() == 1);
  CHECK(passed_on(*unspec) == "z");

  // LOCAL (a health check of the proxy): whatever block follows is skipped unread.
  auto local = channel();
  local->write_inbound(bytes(v2(0x20, 0x11, "garbage-garbage!") + "GET"));
  m = event_of(*local);
  CHECK(m.command == HAProxyCommand::kLocal);
  CHECK(m.protocol == HAProxyProxiedProtocol::kUnknown);
  CHECK(m.source().empty());
  CHECK(passed_on(*local) == "GET");
}

TEST_CASE("v2: malformed headers are refused") {
  const std::string block = ipv4_block();
  for (const std::string& header : {
           v2(0x11, 0x11, block),                                    // version 1 in a v2 header
           v2(0x31, 0x11, block),                                    // version 3
           v2(0x22, 0x11, block),                                    // command 2
           v2(0x21, 0x13, block),                                    // transport 3
           v2(0x21, 0x41, block),                                    // family 4
           v2(0x21, 0x11, block.substr(0, 11)),                      // address block too short
           v2(0x21, 0x21, block),                                    // IPv6 family, IPv4 block
           v2(0x21, 0x11, block + "\x01\x00"),                       // a truncated TLV
           v2(0x21, 0x11, block + tlv(0x01, "abc").substr(0, 5)),    // TLV past the end
           v2(0x21, 0x11, block + tlv(HAProxyTlv::kCrc32c, "abc")),  // CRC32C not 4 bytes
           v2_with_crc(false),                                       // CRC32C mismatch
           v2(0x21, 0x11, block + tlv(HAProxyTlv::kSsl, "\x01")),    // SSL TLV too short
           v2(0x21, 0x11,
              block + tlv(HAProxyTlv::kSsl, std::string("\x01\0\0\0\0\x21\x00\x09", 8) + "TLS")),
       }) {
    auto ch = channel();
    check_refused(*ch, header);
  }
  // A broken signature.
  std::string header = v2(0x21, 0x11, block);
  header[5] = 'X';
  auto ch = channel();
  check_refused(*ch, header);
}

TEST_CASE("v2: a header over max_header_size is refused as soon as its length is known") {
  HAProxyDecoderOptions options;
  options.max_header_size = 64;
  auto ch = channel(options);
  const std::string header = v2(0x21, 0x11, ipv4_block() + tlv(0x01, std::string(40, 'a')));
  // Only the fixed 16 bytes have come: the length field already says too much.
  check_refused<TooLongFrameError>(*ch, header.substr(0, 16));
  auto ok = channel(options);
  ok->write_inbound(bytes(v2(0x21, 0x11, ipv4_block() + tlv(0x01, std::string(30, 'a')))));
  CHECK(event_of(*ok).tlvs.size() == 1);
}

TEST_CASE("versions can be turned off") {
  HAProxyDecoderOptions v2_only;
  v2_only.accept_v1 = false;
  auto ch = channel(v2_only);
  check_refused(*ch, "PROXY TCP4 192.0.2.1 198.51.100.2 1 2\r\n");
  HAProxyDecoderOptions v1_only;
  v1_only.accept_v2 = false;
  auto ch2 = channel(v1_only);
  check_refused(*ch2, v2(0x21, 0x11, ipv4_block()));
}

TEST_CASE("a header not complete within the header timeout closes the connection") {
  HAProxyDecoderOptions options;
  options.header_timeout = 5s;
  auto ch = channel(options);
  ch->freeze_time();
  ch->write_inbound(bytes("PROXY TCP4 192.0.2.1"));
  ch->advance_by(5s - 1ms);
  CHECK(ch->is_open());
  ch->advance_by(1ms);
  CHECK_FALSE(ch->is_open());
  REQUIRE(ch->exceptions().size() == 1);
  CHECK_THROWS_AS(std::rethrow_exception(ch->exceptions().front()), HAProxyTimeoutError);
  CHECK(ch->inbound_messages().empty());
}

TEST_CASE("a peer that sends nothing is closed after the header timeout too") {
  auto ch = channel();  // 5 s by default
  ch->freeze_time();
  ch->advance_by(5s);
  CHECK_FALSE(ch->is_open());
}

TEST_CASE("a complete header stops the deadline") {
  auto ch = channel();
  ch->freeze_time();
  ch->write_inbound(bytes("PROXY UNKNOWN\r\n"));
  ch->advance_by(1h);
  CHECK(ch->is_open());
  CHECK(ch->exceptions().empty());
}

TEST_CASE("a connection that closes in the middle of the header passes nothing on") {
  auto ch = channel();
  ch->write_inbound(bytes("PROXY TCP4 19"));
  ch->close();
  CHECK(ch->inbound_messages().empty());
  CHECK(ch->user_events().empty());
}

TEST_CASE("parse_haproxy_header on its own") {
  auto r = parse_haproxy_header("PROXY TCP4 192.0.2.1 198.51.100.2 1 2\r\nrest");
  REQUIRE(r.has_value());
  CHECK(r->second == 39);
  CHECK(r->first.source_port == 1);
  CHECK_FALSE(parse_haproxy_header("PROX").has_value());
  CHECK_FALSE(parse_haproxy_header(kSig.substr(0, 7)).has_value());
  CHECK_THROWS_AS(parse_haproxy_header("HELLO"), DecoderError);
}
