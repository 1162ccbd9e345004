// Utf8Validator and Utf8FrameValidator (see utf8_frame_validator.hpp).
#include <trellis/codec/websocket/utf8_frame_validator.hpp>

#include <array>
#include <cstring>

#include <trellis/codec/websocket/websocket_close_status.hpp>
#include <trellis/codec/websocket/websocket_frame.hpp>
#include <trellis/codec/websocket/websocket_protocol_error.hpp>

#include "fail_connection.hpp"

namespace trellis::websocket {

namespace {

// States: 0 accept; 1, 2, 3: that many continuation bytes (80..BF) to go; 4: after E0 (next
// A0..BF); 5: after ED (next 80..9F, no surrogates); 6: after F0 (next 90..BF); 7: after F4 (next
// 80..8F, nothing above U+10FFFF); 8 reject.
constexpr std::uint8_t kReject = 8;

// The state after a lead byte (from state 0).
constexpr std::array<std::uint8_t, 256> make_lead_table() {
  std::array<std::uint8_t, 256> t{};
  for (int b = 0; b < 256; ++b) {
    std::uint8_t s = kReject;
    if (b < 0x80) {
      s = 0;
    } else if (b >= 0xC2 && b <= 0xDF) {
      s = 1;
    } else if (b == 0xE0) {
      s = 4;
    } else if (b == 0xED) {
      s = 5;
    } else if (b >= 0xE1 && b <= 0xEF) {
      s = 2;
    } else if (b == 0xF0) {
      s = 6;
    } else if (b >= 0xF1 && b <= 0xF3) {
      s = 3;
    } else if (b == 0xF4) {
      s = 7;
    }
    t[static_cast<std::size_t>(b)] = s;
  }
  return t;
}
constexpr auto kLead = make_lead_table();

std::uint8_t step(std::uint8_t state, std::uint8_t b) noexcept {
  switch (state) {
    case 0:
      return kLead[b];
    case 1:
      return (b & 0xC0) == 0x80 ? 0 : kReject;
    case 2:
      return (b & 0xC0) == 0x80 ? 1 : kReject;
    case 3:
      return (b & 0xC0) == 0x80 ? 2 : kReject;
    case 4:
      return b >= 0xA0 && b <= 0xBF ? 1 : kReject;
    case 5:
      return b >= 0x80 && b <= 0x9F ? 1 : kReject;
    case 6:
      return b >= 0x90 && b <= 0xBF ? 2 : kReject;
    case 7:
      return b >= 0x80 && b <= 0x8F ? 2 : kReject;
    default:
      return kReject;
  }
}

}  // namespace

std::size_t Utf8Validator::feed(std::span<const std::byte> bytes) noexcept {
  if (state_ == kReject) return 0;
  const std::byte* p = bytes.data();
  const std::size_t n = bytes.size();
  std::uint8_t state = state_;
  std::size_t i = 0;
  while (i < n) {
    if (state == 0) {
      // ASCII runs eight bytes at a time.
      while (i + 8 <= n) {
        std::uint64_t w;
        std::memcpy(&w, p + i, 8);
        if ((w & 0x8080808080808080u) != 0) break;
        i += 8;
      }
      if (i == n) break;
    }
    state = step(state, static_cast<std::uint8_t>(p[i]));
    if (state == kReject) {
      state_ = kReject;
      return i;
    }
    ++i;
  }
  state_ = state;
  return n;
}

void Utf8FrameValidator::fail(ChannelHandlerContext& ctx, const char* what) {
  failed_ = true;
  if (close_on_protocol_violation_) {
    detail::fail_connection(ctx, close_status::kInvalidPayloadData, what);
  }
  throw WebSocketProtocolError(close_status::kInvalidPayloadData, what);
}

void Utf8FrameValidator::channel_read(ChannelHandlerContext& ctx, Message msg) {
  if (failed_) {
    if (websocket_opcode_of(msg)) return;  // the connection is being failed: drop what follows
    ctx.fire_channel_read(std::move(msg));
    return;
  }
  if (auto* text = msg.try_get<TextWebSocketFrame>()) {
    utf8_.reset();
    if (utf8_.feed(text->payload.readable_span()) != text->payload.readable_bytes()) {
      fail(ctx, "invalid UTF-8 in a text message");
    }
    in_text_ = !text->fin;
    if (text->fin && !utf8_.complete()) fail(ctx, "a text message ends inside a character");
  } else if (auto* more = msg.try_get<ContinuationWebSocketFrame>(); more && in_text_) {
    if (utf8_.feed(more->payload.readable_span()) != more->payload.readable_bytes()) {
      fail(ctx, "invalid UTF-8 in a text message");
    }
    if (more->fin) {
      in_text_ = false;
      if (!utf8_.complete()) fail(ctx, "a text message ends inside a character");
    }
  } else if (auto* close = msg.try_get<CloseWebSocketFrame>();
             close && close->payload.readable_bytes() > 2) {
    Utf8Validator reason;
    const auto bytes = close->payload.readable_span().subspan(2);
    if (reason.feed(bytes) != bytes.size() || !reason.complete()) {
      fail(ctx, "invalid UTF-8 in a close reason");
    }
  }
  ctx.fire_channel_read(std::move(msg));
}

}  // namespace trellis::websocket
