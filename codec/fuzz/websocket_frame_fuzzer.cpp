// libFuzzer target: arbitrary bytes as the inbound side of a WebSocket connection, through
// WebSocketFrameDecoder, Utf8FrameValidator, WebSocketProtocolHandler and WebSocketFrameAggregator
// on an embedded channel, as a server or a client, with input-chosen limits, fed in input-chosen
// chunks and again a byte at a time. Only frames or WebSocketProtocolError may come out; frames
// must respect the limits and text must be UTF-8; both runs must give the same frames and the
// same error; and the frames the decoder alone reads, written again by WebSocketFrameEncoder,
// must read back as the same frames.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <trellis/codec/websocket.hpp>
#include <trellis/testing/embedded_channel.hpp>

using namespace trellis;
using namespace trellis::websocket;

namespace {

struct Setup {
  WebSocketRole role;
  WebSocketDecoderConfig config;
  std::size_t max_message;
};

struct Result {
  std::vector<std::string> frames;
  int error = 0;  // the close status of the error, 0 for none
};

std::string describe(Message& m, const Setup& setup) {
  const auto opcode = websocket_opcode_of(m);
  if (!opcode) __builtin_trap();
  const WebSocketFrame& f = *websocket_frame_of(m);
  const std::size_t n = f.payload.readable_bytes();
  const auto code = static_cast<std::uint8_t>(*opcode);
  if (is_control_opcode(code) && (n > 125 || !f.fin)) __builtin_trap();
  if ((f.rsv & ~setup.config.allowed_rsv_bits) != 0) __builtin_trap();
  return std::to_string(code) + (f.fin ? "F" : "-") + std::to_string(f.rsv) + ":" +
         f.payload.to_string();
}

// The end of the pipeline: records the frames that arrive while the channel is active (a handler
// that failed the connection closed it; what the decoder still hands on from the same read is
// not the peer's to see).
class Recorder : public ChannelInboundHandler {
 public:
  Recorder(const Setup& setup, Result& result) : setup_(setup), result_(result) {}
  void channel_read(ChannelHandlerContext& ctx, Message msg) override {
    if (!ctx.channel().is_active()) return;
    result_.frames.push_back(describe(msg, setup_));
    if (auto* text = msg.try_get<TextWebSocketFrame>()) {
      // After the validator and the aggregator, a text message is whole and UTF-8.
      Utf8Validator utf8;
      const auto bytes = text->payload.readable_span();
      if (utf8.feed(bytes) != bytes.size() || !utf8.complete() || !text->fin) __builtin_trap();
      if (bytes.size() > setup_.max_message) __builtin_trap();
    }
  }

 private:
  const Setup& setup_;
  Result& result_;
};

Result run_full(std::span<const std::uint8_t> input, std::size_t step, const Setup& setup) {
  WebSocketProtocolConfig protocol;
  protocol.role = setup.role;
  protocol.drop_pong_frames = false;
  Result result;
  EmbeddedChannel ch{std::make_shared<WebSocketFrameDecoder>(setup.role, setup.config),
                     std::make_shared<Utf8FrameValidator>(),
                     std::make_shared<WebSocketProtocolHandler>(protocol),
                     std::make_shared<WebSocketFrameAggregator>(setup.max_message),
                     std::make_shared<Recorder>(setup, result)};
  for (std::size_t i = 0; i < input.size() && ch.is_open(); i += step) {
    const std::size_t n = std::min(step, input.size() - i);
    try {
      ch.write_inbound(ByteBuf::from(std::as_bytes(input.subspan(i, n))));
    } catch (const WebSocketProtocolError& e) {
      if (e.status() != 1002 && e.status() != 1007 && e.status() != 1009) __builtin_trap();
      result.error = e.status();
      break;
    }
  }
  return result;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  static constexpr std::size_t kFrameLimits[] = {125, 1000, 65536, 1 << 20};
  Setup setup;
  setup.role = (data[0] & 1) != 0 ? WebSocketRole::kClient : WebSocketRole::kServer;
  setup.config.close_on_protocol_violation = (data[0] & 2) != 0;
  setup.config.max_frame_payload_length = kFrameLimits[(data[0] >> 2) & 3];
  setup.config.max_message_size = (data[0] & 0x10) != 0 ? 300 : 1 << 20;
  setup.config.allowed_rsv_bits = (data[0] & 0x20) != 0 ? 4 : 0;
  setup.max_message = (data[0] & 0x40) != 0 ? 200 : 1 << 20;
  const std::size_t step = 1 + data[1];
  const auto input = std::span<const std::uint8_t>(data + 2, size - 2);

  // The same frames and the same error however the input is split.
  const Result chunked = run_full(input, step, setup);
  const Result bytewise = run_full(input, 1, setup);
  if (chunked.frames != bytewise.frames || chunked.error != bytewise.error) __builtin_trap();

  // The decoder alone; its frames written again by the encoder of the peer's role read back the
  // same.
  EmbeddedChannel decoder{std::make_shared<WebSocketFrameDecoder>(setup.role, setup.config)};
  std::vector<std::string> frames;
  std::vector<Message> again;
  for (std::size_t i = 0; i < input.size(); i += step) {
    try {
      decoder.write_inbound(
          ByteBuf::from(std::as_bytes(input.subspan(i, std::min(step, input.size() - i)))));
    } catch (const WebSocketProtocolError&) {
      break;
    }
    while (auto m = decoder.read_inbound<Message>()) {
      frames.push_back(describe(*m, setup));
      again.push_back(std::move(*m));
    }
  }
  if (frames.empty()) return 0;
  const WebSocketRole peer =
      setup.role == WebSocketRole::kServer ? WebSocketRole::kClient : WebSocketRole::kServer;
  EmbeddedChannel encoder{std::make_shared<WebSocketFrameEncoder>(peer)};
  for (auto& m : again) encoder.write(std::move(m));
  encoder.flush_outbound();
  EmbeddedChannel reader{std::make_shared<WebSocketFrameDecoder>(setup.role, setup.config)};
  std::vector<std::string> reread;
  while (auto buf = encoder.read_outbound<ByteBuf>()) {
    reader.write_inbound(std::move(*buf));
    while (auto m = reader.read_inbound<Message>()) reread.push_back(describe(*m, setup));
  }
  if (reread != frames) __builtin_trap();
  return 0;
}
