// The HTTP/2 frames (RFC 9113 §4, §6) as messages: what Http2FrameReader delivers and what
// Http2FrameWriter takes apart, plus the frame type, flag and setting constants of the wire.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <trellis/codec/http2/http2_error.hpp>
#include <trellis/codec/http2/http2_headers.hpp>
#include <trellis/pipeline/byte_buf.hpp>

namespace trellis::http2 {

/// Frame types (RFC 9113 §6).
enum class Http2FrameType : std::uint8_t {
  kData = 0x0,
  kHeaders = 0x1,
  kPriority = 0x2,
  kRstStream = 0x3,
  kSettings = 0x4,
  kPushPromise = 0x5,
  kPing = 0x6,
  kGoAway = 0x7,
  kWindowUpdate = 0x8,
  kContinuation = 0x9,
};

/// Frame flags (each meaningful on some types only).
namespace http2_flags {
inline constexpr std::uint8_t kEndStream = 0x1;   ///< DATA, HEADERS
inline constexpr std::uint8_t kAck = 0x1;         ///< SETTINGS, PING
inline constexpr std::uint8_t kEndHeaders = 0x4;  ///< HEADERS, PUSH_PROMISE, CONTINUATION
inline constexpr std::uint8_t kPadded = 0x8;      ///< DATA, HEADERS, PUSH_PROMISE
inline constexpr std::uint8_t kPriority = 0x20;   ///< HEADERS
}  // namespace http2_flags

/// The 9-octet frame header's size.
inline constexpr std::size_t kHttp2FrameHeaderLength = 9;
/// SETTINGS_MAX_FRAME_SIZE's initial value and lower bound.
inline constexpr std::uint32_t kHttp2DefaultMaxFrameSize = 16384;
/// SETTINGS_MAX_FRAME_SIZE's upper bound (2^24 - 1).
inline constexpr std::uint32_t kHttp2MaxFrameSizeUpperBound = 16777215;
/// The largest flow-control window (2^31 - 1).
inline constexpr std::uint32_t kHttp2MaxWindowSize = 0x7fffffff;
/// The client connection preface (RFC 9113 §3.4).
inline constexpr std::string_view kHttp2ClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// SETTINGS parameters (RFC 9113 §6.5.2). Other identifiers are valid and ignored by endpoints.
enum class Http2SettingId : std::uint16_t {
  kHeaderTableSize = 0x1,
  kEnablePush = 0x2,
  kMaxConcurrentStreams = 0x3,
  kInitialWindowSize = 0x4,
  kMaxFrameSize = 0x5,
  kMaxHeaderListSize = 0x6,
};

/// One SETTINGS parameter; `id` may be one Http2SettingId does not name.
struct Http2Setting {
  std::uint16_t id = 0;     ///< the identifier (compare with Http2SettingId)
  std::uint32_t value = 0;  ///< its value
  /// Equal when both members are.
  bool operator==(const Http2Setting&) const = default;
};

/// A stream's priority as HEADERS and PRIORITY carry it (deprecated by RFC 9113 §5.3.2: parsed
/// and kept, otherwise unused).
struct Http2Priority {
  std::uint32_t stream_dependency = 0;  ///< the stream this one depends on
  std::uint16_t weight = 16;            ///< 1..256 (the wire's value + 1)
  bool exclusive = false;               ///< the E flag
  /// Equal when all members are.
  bool operator==(const Http2Priority&) const = default;
};

/// DATA (§6.1). `data` is a slice of the bytes read, not a copy.
struct Http2DataFrame {
  std::uint32_t stream_id = 0;  ///< never 0
  ByteBuf data;                 ///< the payload without padding
  bool end_stream = false;      ///< END_STREAM
  /// The padding octets, counting the Pad Length field: 0 when not padded, else 1 + pad length.
  std::uint32_t padding = 0;
  /// What the frame takes from the flow-control windows: the whole payload (§6.9.1).
  std::uint32_t flow_controlled_length() const noexcept {
    return static_cast<std::uint32_t>(data.readable_bytes()) + padding;
  }
};

/// HEADERS (§6.2) with its CONTINUATION frames, the header block decoded.
struct Http2HeadersFrame {
  std::uint32_t stream_id = 0;            ///< never 0
  Http2Headers headers;                   ///< the decoded header list
  bool end_stream = false;                ///< END_STREAM
  std::optional<Http2Priority> priority;  ///< set when the PRIORITY flag was
  std::uint32_t padding = 0;              ///< as in Http2DataFrame
};

/// PUSH_PROMISE (§6.6) with its CONTINUATION frames, the header block decoded.
struct Http2PushPromiseFrame {
  std::uint32_t stream_id = 0;           ///< the stream the promise is made on
  std::uint32_t promised_stream_id = 0;  ///< the stream reserved for the pushed response
  Http2Headers headers;                  ///< the promised request's header list
  std::uint32_t padding = 0;             ///< as in Http2DataFrame
};

/// PRIORITY (§6.3).
struct Http2PriorityFrame {
  std::uint32_t stream_id = 0;  ///< never 0
  Http2Priority priority;       ///< the stream's priority
};

/// RST_STREAM (§6.4).
struct Http2ResetFrame {
  std::uint32_t stream_id = 0;                   ///< never 0
  Http2Error error_code = Http2Error::kNoError;  ///< why the stream ends
};

/// SETTINGS (§6.5). An acknowledgement carries no settings.
struct Http2SettingsFrame {
  bool ack = false;                    ///< ACK
  std::vector<Http2Setting> settings;  ///< in the order received, unknown identifiers included
};

/// PING (§6.7).
struct Http2PingFrame {
  std::uint64_t opaque_data = 0;  ///< the 8 octets, big-endian
  bool ack = false;               ///< ACK
};

/// GOAWAY (§6.8).
struct Http2GoAwayFrame {
  std::uint32_t last_stream_id = 0;              ///< the last stream the sender may process
  Http2Error error_code = Http2Error::kNoError;  ///< why the connection ends
  ByteBuf debug_data;                            ///< opaque diagnostics (a slice)
};

/// WINDOW_UPDATE (§6.9).
struct Http2WindowUpdateFrame {
  std::uint32_t stream_id = 0;  ///< 0 for the connection's window
  std::uint32_t increment = 0;  ///< 1..2^31-1
};

/// A frame of a type this endpoint does not know (§5.5): to be ignored.
struct Http2UnknownFrame {
  std::uint8_t type = 0;        ///< the frame type
  std::uint8_t flags = 0;       ///< its flags
  std::uint32_t stream_id = 0;  ///< its stream (reserved bit cleared)
  ByteBuf payload;              ///< the payload (a slice)
};

}  // namespace trellis::http2
