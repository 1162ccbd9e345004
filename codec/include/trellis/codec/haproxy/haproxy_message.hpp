// HAProxyMessage: what a PROXY protocol header (HAProxy's spec, versions 1 and 2) tells a server
// behind a load balancer: the client's original source and destination addresses and ports,
// and, in version 2, the type-length-value fields (TLS details, ALPN, authority, unique id).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <trellis/pipeline/attribute_map.hpp>

namespace trellis::codec {

/// The version of the PROXY protocol header.
enum class HAProxyProtocolVersion : std::uint8_t {
  kV1,  ///< the text header ("PROXY TCP4 ...\r\n")
  kV2,  ///< the binary header
};

/// What the proxy says about the connection.
enum class HAProxyCommand : std::uint8_t {
  kLocal,  ///< the proxy's own connection (a health check): no client addresses
  kProxy,  ///< a relayed client connection: the addresses are the client's
};

/// The protocol and address family of the relayed connection.
enum class HAProxyProxiedProtocol : std::uint8_t {
  kUnknown,  ///< v1 UNKNOWN, v2 UNSPEC (or a LOCAL command): no addresses
  kTcp4,
  kTcp6,
  kUdp4,
  kUdp6,
  kUnixStream,
  kUnixDgram,
};

/// A version 2 TLV (type-length-value) field; `value` holds its bytes.
struct HAProxyTlv {
  /// The types HAProxy's spec defines (PP2_TYPE_*); others may appear and are kept.
  enum Type : std::uint8_t {
    kAlpn = 0x01,
    kAuthority = 0x02,
    kCrc32c = 0x03,
    kNoop = 0x04,
    kUniqueId = 0x05,
    kSsl = 0x20,
    kSslVersion = 0x21,
    kSslCn = 0x22,
    kSslCipher = 0x23,
    kSslSigAlg = 0x24,
    kSslKeyAlg = 0x25,
    kNetns = 0x30,
  };
  std::uint8_t type = 0;  ///< a Type, or another (unknown types are kept)
  std::string value;      ///< the field's bytes
};

/// The PP2_TYPE_SSL field: how the client connected to the proxy.
struct HAProxySslTlv {
  std::uint8_t client = 0;   ///< PP2_CLIENT_SSL (0x01), _CERT_CONN (0x02), _CERT_SESS (0x04)
  std::uint32_t verify = 0;  ///< 0 when the client presented a certificate that was verified
  std::vector<HAProxyTlv> sub_tlvs;  ///< kSslVersion, kSslCn, kSslCipher, ...
  /// True when the client connected over TLS.
  bool is_ssl() const noexcept { return (client & 0x01) != 0; }
  /// The sub-field of type, if present.
  std::optional<std::string_view> get(std::uint8_t type) const noexcept;
};

/// A decoded PROXY protocol header (Netty's HAProxyMessage). Addresses are text as the header
/// gave them (IPv4 dotted quad, IPv6, or a Unix socket path); empty with kUnknown.
struct HAProxyMessage {
  HAProxyProtocolVersion version = HAProxyProtocolVersion::kV1;  ///< the header's version
  HAProxyCommand command = HAProxyCommand::kProxy;               ///< relayed, or the proxy's own
  HAProxyProxiedProtocol protocol = HAProxyProxiedProtocol::kUnknown;  ///< family and transport
  std::string source_address;          ///< the client's address (text)
  std::string destination_address;     ///< the address the client connected to (text)
  std::uint16_t source_port = 0;       ///< the client's port
  std::uint16_t destination_port = 0;  ///< the port the client connected to
  std::vector<HAProxyTlv> tlvs;  ///< version 2 only, in header order (the CRC32C one verified)

  /// The first TLV of type, if any.
  const HAProxyTlv* tlv(std::uint8_t type) const noexcept;
  /// The PP2_TYPE_SSL field, parsed; nullopt when absent. Throws DecoderError when malformed
  /// (the decoder checks it, so a decoded message never throws).
  std::optional<HAProxySslTlv> ssl() const;
  /// "203.0.113.7:41234", "[2001:db8::1]:443", the socket path, or "" with kUnknown.
  std::string source() const;
  /// As source(), for the destination.
  std::string destination() const;
};

/// The channel attribute under which HAProxyMessageDecoder leaves the header it decoded.
const AttributeKey<HAProxyMessage>& haproxy_message_key();

}  // namespace trellis::codec
