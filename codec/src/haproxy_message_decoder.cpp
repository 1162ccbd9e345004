#include <trellis/codec/haproxy/haproxy_message_decoder.hpp>

#include <arpa/inet.h>

#include <array>
#include <cstring>
#include <string>

#include <trellis/pipeline/channel.hpp>
#include <trellis/pipeline/channel_handler_context.hpp>
#include <trellis/pipeline/channel_pipeline.hpp>
#include <trellis/pipeline/event_executor.hpp>

namespace trellis::codec {

namespace {

constexpr std::string_view kV2Signature("\r\n\r\n\0\r\nQUIT\n", 12);
constexpr std::string_view kV1Prefix("PROXY ");
constexpr std::size_t kV1MaxLine = 107;  // "PROXY UNKNOWN" with two IPv6 addresses and CRLF
constexpr std::size_t kV2Fixed = 16;

[[noreturn]] void bad(const std::string& what) { throw DecoderError("PROXY protocol: " + what); }

// CRC-32C (Castagnoli), reflected, as the PP2_TYPE_CRC32C field uses.
std::uint32_t crc32c(std::string_view data) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char ch : data) {
    crc = table[(crc ^ static_cast<std::uint8_t>(ch)) & 0xFFu] ^ (crc >> 8);
  }
  return crc ^ 0xFFFFFFFFu;
}

std::uint16_t be16(std::string_view b, std::size_t at) {
  return static_cast<std::uint16_t>((static_cast<std::uint8_t>(b[at]) << 8) |
                                    static_cast<std::uint8_t>(b[at + 1]));
}

// True when the first min(size, prefix.size()) bytes of b are prefix's.
bool starts_like(std::string_view b, std::string_view prefix) {
  const std::size_t n = std::min(b.size(), prefix.size());
  return b.substr(0, n) == prefix.substr(0, n);
}

std::string address_text(int family, const char* raw) {
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(family, raw, text, sizeof text) == nullptr) bad("unprintable address");
  return text;
}

// --- version 1 -----------------------------------------------------------------------------

std::uint16_t v1_port(std::string_view s) {
  if (s.empty() || s.size() > 5 || (s.size() > 1 && s[0] == '0')) {
    bad("bad port '" + std::string(s) + "'");
  }
  std::uint32_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') bad("bad port '" + std::string(s) + "'");
    v = v * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (v > 65535) bad("port out of range '" + std::string(s) + "'");
  return static_cast<std::uint16_t>(v);
}

std::string v1_address(std::string_view s, int family) {
  const std::string text(s);
  unsigned char raw[16];
  if (inet_pton(family, text.c_str(), raw) != 1) bad("bad address '" + text + "'");
  return text;
}

std::optional<std::pair<HAProxyMessage, std::size_t>> parse_v1(std::string_view b) {
  const std::size_t limit = std::min(b.size(), kV1MaxLine);
  const std::size_t cr = b.substr(0, limit).find('\r');
  if (cr == std::string_view::npos) {
    if (b.size() >= kV1MaxLine) bad("version 1 header longer than 107 bytes");
    if (b.substr(0, limit).find('\n') != std::string_view::npos) bad("LF without CR");
    return std::nullopt;
  }
  if (cr + 1 >= b.size()) return std::nullopt;  // the LF has not come yet
  if (b[cr + 1] != '\n') bad("CR not followed by LF");
  const std::string_view line = b.substr(0, cr);
  std::vector<std::string_view> fields;
  std::size_t at = 0;
  while (at <= line.size()) {
    const std::size_t sp = line.find(' ', at);
    const std::size_t end = sp == std::string_view::npos ? line.size() : sp;
    fields.push_back(line.substr(at, end - at));
    if (sp == std::string_view::npos) break;
    at = sp + 1;
  }
  HAProxyMessage m;
  m.version = HAProxyProtocolVersion::kV1;
  m.command = HAProxyCommand::kProxy;
  if (fields.size() < 2 || fields[0] != "PROXY") bad("not a PROXY line");
  if (fields[1] == "UNKNOWN") {
    m.protocol = HAProxyProxiedProtocol::kUnknown;  // the rest of the line is ignored
    return std::make_pair(std::move(m), cr + 2);
  }
  int family = 0;
  if (fields[1] == "TCP4") {
    family = AF_INET;
    m.protocol = HAProxyProxiedProtocol::kTcp4;
  } else if (fields[1] == "TCP6") {
    family = AF_INET6;
    m.protocol = HAProxyProxiedProtocol::kTcp6;
  } else {
    bad("unknown protocol '" + std::string(fields[1]) + "'");
  }
  if (fields.size() != 6) bad("version 1 line needs 6 fields separated by single spaces");
  m.source_address = v1_address(fields[2], family);
  m.destination_address = v1_address(fields[3], family);
  m.source_port = v1_port(fields[4]);
  m.destination_port = v1_port(fields[5]);
  return std::make_pair(std::move(m), cr + 2);
}

// --- version 2 -----------------------------------------------------------------------------

std::vector<HAProxyTlv> v2_tlvs(std::string_view header, std::size_t at) {
  std::vector<HAProxyTlv> tlvs;
  while (at < header.size()) {
    if (header.size() - at < 3) bad("truncated TLV");
    const auto type = static_cast<std::uint8_t>(header[at]);
    const std::size_t len = be16(header, at + 1);
    if (len > header.size() - at - 3) bad("a TLV runs past the header's end");
    const std::size_t value_at = at + 3;
    if (type == HAProxyTlv::kCrc32c) {
      if (len != 4) bad("PP2_TYPE_CRC32C is not 4 bytes");
      const std::uint32_t expected =
          (std::uint32_t{be16(header, value_at)} << 16) | be16(header, value_at + 2);
      std::string copy(header);
      std::memset(copy.data() + value_at, 0, 4);
      if (crc32c(copy) != expected) bad("CRC32C mismatch");
    }
    tlvs.push_back({type, std::string(header.substr(value_at, len))});
    at = value_at + len;
  }
  return tlvs;
}

std::optional<std::pair<HAProxyMessage, std::size_t>> parse_v2(
    std::string_view b, const HAProxyDecoderOptions& options) {
  if (b.size() < kV2Fixed) return std::nullopt;
  const auto ver_cmd = static_cast<std::uint8_t>(b[12]);
  const auto fam = static_cast<std::uint8_t>(b[13]);
  const std::size_t len = be16(b, 14);
  if ((ver_cmd >> 4) != 2) bad("unknown version " + std::to_string(ver_cmd >> 4));
  const int cmd = ver_cmd & 0x0F;
  if (cmd > 1) bad("unknown command " + std::to_string(cmd));
  HAProxyMessage m;
  m.version = HAProxyProtocolVersion::kV2;
  m.command = cmd == 0 ? HAProxyCommand::kLocal : HAProxyCommand::kProxy;
  std::size_t address_size = 0;
  switch (fam) {
    case 0x00:
      m.protocol = HAProxyProxiedProtocol::kUnknown;
      break;
    case 0x11:
      m.protocol = HAProxyProxiedProtocol::kTcp4;
      address_size = 12;
      break;
    case 0x12:
      m.protocol = HAProxyProxiedProtocol::kUdp4;
      address_size = 12;
      break;
    case 0x21:
      m.protocol = HAProxyProxiedProtocol::kTcp6;
      address_size = 36;
      break;
    case 0x22:
      m.protocol = HAProxyProxiedProtocol::kUdp6;
      address_size = 36;
      break;
    case 0x31:
      m.protocol = HAProxyProxiedProtocol::kUnixStream;
      address_size = 216;
      break;
    case 0x32:
      m.protocol = HAProxyProxiedProtocol::kUnixDgram;
      address_size = 216;
      break;
    default:
      bad("unknown address family and transport 0x" + std::to_string(fam));
  }
  const std::size_t total = kV2Fixed + len;
  if (total > options.max_header_size) {
    throw TooLongFrameError("PROXY protocol: version 2 header of " + std::to_string(total) +
                            " bytes is over the limit of " +
                            std::to_string(options.max_header_size));
  }
  if (m.command == HAProxyCommand::kProxy && len < address_size) {
    bad("address block shorter than its family needs");
  }
  if (b.size() < total) return std::nullopt;
  if (m.command == HAProxyCommand::kLocal) {
    // The proxy's own connection: the block is discarded, the real endpoints stand.
    m.protocol = HAProxyProxiedProtocol::kUnknown;
    return std::make_pair(std::move(m), total);
  }
  const std::string_view header = b.substr(0, total);
  const char* a = header.data() + kV2Fixed;
  switch (address_size) {
    case 12:
      m.source_address = address_text(AF_INET, a);
      m.destination_address = address_text(AF_INET, a + 4);
      m.source_port = be16(header, kV2Fixed + 8);
      m.destination_port = be16(header, kV2Fixed + 10);
      break;
    case 36:
      m.source_address = address_text(AF_INET6, a);
      m.destination_address = address_text(AF_INET6, a + 16);
      m.source_port = be16(header, kV2Fixed + 32);
      m.destination_port = be16(header, kV2Fixed + 34);
      break;
    case 216: {
      const std::string_view src(a, 108);
      const std::string_view dst(a + 108, 108);
      m.source_address = std::string(src.substr(0, src.find('\0')));
      m.destination_address = std::string(dst.substr(0, dst.find('\0')));
      break;
    }
    default:
      break;
  }
  m.tlvs = v2_tlvs(header, kV2Fixed + address_size);
  (void)m.ssl();  // a malformed PP2_TYPE_SSL is refused now, not when the application reads it
  return std::make_pair(std::move(m), total);
}

}  // namespace

std::optional<std::pair<HAProxyMessage, std::size_t>> parse_haproxy_header(
    std::string_view bytes, const HAProxyDecoderOptions& options) {
  if (bytes.empty()) return std::nullopt;
  if (options.accept_v2 && starts_like(bytes, kV2Signature)) {
    if (bytes.size() < kV2Signature.size()) return std::nullopt;
    return parse_v2(bytes, options);
  }
  if (options.accept_v1 && starts_like(bytes, kV1Prefix)) {
    if (bytes.size() < kV1Prefix.size()) return std::nullopt;
    return parse_v1(bytes);
  }
  bad("the connection does not start with an accepted PROXY protocol header");
}

HAProxyMessageDecoder::HAProxyMessageDecoder(HAProxyDecoderOptions options) : options_(options) {}

HAProxyMessageDecoder::~HAProxyMessageDecoder() { cancel_timer(); }

void HAProxyMessageDecoder::handler_added(ChannelHandlerContext& ctx) {
  if (ctx.channel().is_active()) arm_timer(ctx);
}

void HAProxyMessageDecoder::channel_active(ChannelHandlerContext& ctx) {
  arm_timer(ctx);
  ByteToMessageDecoder::channel_active(ctx);
}

void HAProxyMessageDecoder::arm_timer(ChannelHandlerContext& ctx) {
  if (timer_armed_ || done_ || options_.header_timeout.count() <= 0) return;
  timer_armed_ = true;
  auto* context = &ctx;  // the handler cancels the timer before either goes away
  timer_ = ctx.executor().schedule(options_.header_timeout, [this, context] {
    if (done_) return;
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(options_.header_timeout).count();
    refuse(*context,
           std::make_exception_ptr(HAProxyTimeoutError(
               "PROXY protocol: no complete header within " + std::to_string(ms) + " ms")));
  });
}

void HAProxyMessageDecoder::cancel_timer() noexcept {
  if (timer_.valid()) timer_.cancel();
  timer_ = ScheduledFuture<void>();
}

void HAProxyMessageDecoder::refuse(ChannelHandlerContext& ctx, std::exception_ptr error) {
  done_ = true;
  cancel_timer();
  drop_undelivered();
  ctx.fire_exception_caught(std::move(error));
  ctx.close();
}

void HAProxyMessageDecoder::decode(ChannelHandlerContext& ctx, ByteBuf& in, Out& /*out*/) {
  if (done_) {  // refused: what still arrives before the close is dropped
    in.skip_bytes(in.readable_bytes());
    return;
  }
  const auto span = in.readable_span();
  std::optional<std::pair<HAProxyMessage, std::size_t>> parsed;
  try {
    parsed = parse_haproxy_header(
        std::string_view(reinterpret_cast<const char*>(span.data()), span.size()), options_);
  } catch (const DecoderError&) {
    in.skip_bytes(in.readable_bytes());
    refuse(ctx, std::current_exception());
    return;
  }
  if (!parsed) return;
  in.skip_bytes(parsed->second);
  done_ = true;
  cancel_timer();
  ctx.channel().set_attr(haproxy_message_key(), parsed->first);
  ctx.fire_user_event_triggered(Message::make<HAProxyMessage>(std::move(parsed->first)));
  // The bytes after the header go to the next handler as they came, once decode() returned.
  ctx.pipeline().remove(*this);
}

void HAProxyMessageDecoder::handler_removed0(ChannelHandlerContext& /*ctx*/) { cancel_timer(); }

}  // namespace trellis::codec
