#include <trellis/codec/haproxy/haproxy_message.hpp>

#include <trellis/codec/decoder_error.hpp>

namespace trellis::codec {

std::optional<std::string_view> HAProxySslTlv::get(std::uint8_t type) const noexcept {
  for (const auto& t : sub_tlvs) {
    if (t.type == type) return std::string_view(t.value);
  }
  return std::nullopt;
}

const HAProxyTlv* HAProxyMessage::tlv(std::uint8_t type) const noexcept {
  for (const auto& t : tlvs) {
    if (t.type == type) return &t;
  }
  return nullptr;
}

std::optional<HAProxySslTlv> HAProxyMessage::ssl() const {
  const HAProxyTlv* t = tlv(HAProxyTlv::kSsl);
  if (t == nullptr) return std::nullopt;
  const std::string_view v = t->value;
  if (v.size() < 5) throw DecoderError("PROXY protocol: PP2_TYPE_SSL shorter than 5 bytes");
  HAProxySslTlv ssl;
  ssl.client = static_cast<std::uint8_t>(v[0]);
  for (int i = 1; i <= 4; ++i) {
    ssl.verify = (ssl.verify << 8) | static_cast<std::uint8_t>(v[static_cast<std::size_t>(i)]);
  }
  std::size_t at = 5;
  while (at < v.size()) {
    if (v.size() - at < 3) throw DecoderError("PROXY protocol: truncated PP2_TYPE_SSL sub-field");
    const auto type = static_cast<std::uint8_t>(v[at]);
    const std::size_t len = (std::size_t{static_cast<std::uint8_t>(v[at + 1])} << 8) |
                            static_cast<std::uint8_t>(v[at + 2]);
    at += 3;
    if (len > v.size() - at) {
      throw DecoderError("PROXY protocol: a PP2_TYPE_SSL sub-field runs past its end");
    }
    ssl.sub_tlvs.push_back({type, std::string(v.substr(at, len))});
    at += len;
  }
  return ssl;
}

namespace {

std::string endpoint(HAProxyProxiedProtocol protocol, const std::string& address,
                     std::uint16_t port) {
  switch (protocol) {
    case HAProxyProxiedProtocol::kTcp4:
    case HAProxyProxiedProtocol::kUdp4:
      return address + ":" + std::to_string(port);
    case HAProxyProxiedProtocol::kTcp6:
    case HAProxyProxiedProtocol::kUdp6:
      return "[" + address + "]:" + std::to_string(port);
    case HAProxyProxiedProtocol::kUnixStream:
    case HAProxyProxiedProtocol::kUnixDgram:
      return address;
    case HAProxyProxiedProtocol::kUnknown:
      break;
  }
  return {};
}

}  // namespace

std::string HAProxyMessage::source() const {
  return endpoint(protocol, source_address, source_port);
}

std::string HAProxyMessage::destination() const {
  return endpoint(protocol, destination_address, destination_port);
}

const AttributeKey<HAProxyMessage>& haproxy_message_key() {
  static const AttributeKey<HAProxyMessage> key("haproxy-message");
  return key;
}

}  // namespace trellis::codec
