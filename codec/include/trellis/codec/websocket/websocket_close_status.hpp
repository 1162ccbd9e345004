// WebSocket close status codes (RFC 6455 §7.4) and which of them may appear on the wire.
#pragma once

#include <cstdint>

namespace trellis::websocket {

/// The status codes of RFC 6455 §7.4.1 (and the IANA registry) that the codec uses or names.
namespace close_status {
inline constexpr std::uint16_t kNormalClosure = 1000;  ///< The purpose was fulfilled.
inline constexpr std::uint16_t kEndpointUnavailable =
    1001;                                              ///< Going away (server down, page left).
inline constexpr std::uint16_t kProtocolError = 1002;  ///< A protocol error.
inline constexpr std::uint16_t kInvalidMessageType = 1003;  ///< A data type it cannot accept.
/// Reserved: "no status code was present"; never sent on the wire.
inline constexpr std::uint16_t kEmpty = 1005;
/// Reserved: "closed abnormally, without a Close frame"; never sent on the wire.
inline constexpr std::uint16_t kAbnormalClosure = 1006;
inline constexpr std::uint16_t kInvalidPayloadData = 1007;  ///< Text that is not UTF-8.
inline constexpr std::uint16_t kPolicyViolation = 1008;     ///< A message that violates its policy.
inline constexpr std::uint16_t kMessageTooBig = 1009;       ///< A frame or message too big.
inline constexpr std::uint16_t kMandatoryExtension = 1010;  ///< (client) an extension is missing.
inline constexpr std::uint16_t kInternalServerError = 1011;  ///< An unexpected condition.
}  // namespace close_status

/// Whether `code` may be sent in a Close frame (RFC 6455 §7.4): 1000-1003, 1007-1014 (the codes
/// RFC 6455 and the IANA registry define) and 3000-4999 (libraries, frameworks, applications).
/// Everything else (0-999, 1004-1006, 1015, 1016-2999, 5000 and above) is a protocol error when
/// received.
constexpr bool is_valid_close_status(int code) noexcept {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
         (code >= 3000 && code <= 4999);
}

}  // namespace trellis::websocket
