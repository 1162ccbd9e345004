// Helpers of the WebSocket tests: frames written out byte by byte as RFC 6455 §5.2 draws them
// (independently of WebSocketFrameEncoder), and a check that a channel failed with a status.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <trellis/codec/websocket/websocket_frame.hpp>
#include <trellis/codec/websocket/websocket_protocol_error.hpp>
#include <trellis/pipeline/message.hpp>
#include <trellis/testing/embedded_channel.hpp>

namespace ws_test {

/// How a frame's length is written: the shortest form, or forced into 16 or 64 bits.
enum class LengthForm { kShortest, k16, k64 };

/// The parts of a frame to write.
struct WireFrame {
  std::uint8_t opcode = 0x1;
  std::string payload;
  bool fin = true;
  std::uint8_t rsv = 0;
  bool masked = true;
  std::uint32_t key = 0x37fa213d;  // RFC 6455 §5.7's example key
  LengthForm form = LengthForm::kShortest;
};

/// The bytes of `f` on the wire (the payload masked when f.masked).
inline std::string wire(const WireFrame& f) {
  std::string out;
  out.push_back(static_cast<char>((f.fin ? 0x80 : 0) | (f.rsv << 4) | f.opcode));
  const std::uint64_t n = f.payload.size();
  const char mask = f.masked ? static_cast<char>(0x80) : 0;
  LengthForm form = f.form;
  if (form == LengthForm::kShortest) {
    form = n <= 125 ? LengthForm::kShortest : n <= 0xffff ? LengthForm::k16 : LengthForm::k64;
  }
  if (form == LengthForm::kShortest) {
    out.push_back(static_cast<char>(mask | static_cast<char>(n)));
  } else if (form == LengthForm::k16) {
    out.push_back(static_cast<char>(mask | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n));
  } else {
    out.push_back(static_cast<char>(mask | 127));
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(n >> shift));
  }
  if (!f.masked) return out + f.payload;
  const char key[4] = {static_cast<char>(f.key >> 24), static_cast<char>(f.key >> 16),
                       static_cast<char>(f.key >> 8), static_cast<char>(f.key)};
  out.append(key, 4);
  for (std::size_t i = 0; i < f.payload.size(); ++i) out.push_back(f.payload[i] ^ key[i % 4]);
  return out;
}

/// A masked (client to server) frame.
inline std::string client_frame(std::uint8_t opcode, std::string payload, bool fin = true) {
  return wire({.opcode = opcode, .payload = std::move(payload), .fin = fin});
}
/// An unmasked (server to client) frame.
inline std::string server_frame(std::uint8_t opcode, std::string payload, bool fin = true) {
  return wire({.opcode = opcode, .payload = std::move(payload), .fin = fin, .masked = false});
}

/// The payload of a close frame with `status` and `reason`.
inline std::string close_payload(std::uint16_t status, std::string_view reason = {}) {
  std::string out;
  out.push_back(static_cast<char>(status >> 8));
  out.push_back(static_cast<char>(status));
  return out.append(reason);
}

/// The opcode, FIN, RSV and payload of a frame message, as text, to compare and print.
inline std::string describe(const trellis::Message& m) {
  auto& msg = const_cast<trellis::Message&>(m);
  const auto opcode = trellis::websocket::websocket_opcode_of(msg);
  if (!opcode) return "<" + std::string(msg.type_name()) + ">";
  const auto* f = trellis::websocket::websocket_frame_of(msg);
  return "op" + std::to_string(static_cast<int>(*opcode)) + (f->fin ? " fin" : " more") + " rsv" +
         std::to_string(f->rsv) + " [" + f->payload.to_string() + "]";
}

/// A frame message of `opcode` (as the decoder makes them).
inline trellis::Message frame(trellis::websocket::WebSocketOpcode opcode, std::string_view payload,
                              bool fin = true, std::uint8_t rsv = 0) {
  return trellis::websocket::make_websocket_frame(opcode, trellis::ByteBuf::from(payload), fin,
                                                  rsv);
}

/// verify_decoder's equality and printer for frame messages.
struct FrameEq {
  bool operator()(const trellis::Message& a, const trellis::Message& b) const {
    return describe(a) == describe(b);
  }
};
/// verify_decoder's printer for frame messages.
struct FramePrint {
  std::string operator()(const trellis::Message& m) const { return describe(m); }
};

/// Writes `bytes` inbound and checks the channel failed with `status`: WebSocketProtocolError
/// thrown, a CloseWebSocketFrame with `status` written, the channel closed.
inline void check_fails(trellis::EmbeddedChannel& ch, const std::string& bytes,
                        std::uint16_t status) {
  std::optional<std::uint16_t> thrown;
  try {
    ch.write_inbound(trellis::ByteBuf::from(bytes));
  } catch (const trellis::websocket::WebSocketProtocolError& e) {
    thrown = e.status();
  }
  REQUIRE_MESSAGE(thrown.has_value(), "no WebSocketProtocolError");
  CHECK(*thrown == status);
  auto close = ch.read_outbound<trellis::websocket::CloseWebSocketFrame>();
  REQUIRE_MESSAGE(close.has_value(), "no Close frame written");
  CHECK(close->status_code() == status);
  CHECK_FALSE(ch.is_open());
}

}  // namespace ws_test
