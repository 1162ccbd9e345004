// Test support for Http2FrameCodec: a codec on an EmbeddedChannel and the peer across from it,
// which builds its frames with Http2FrameWriter and parses what the codec sent with an
// Http2FrameReader, as text ("SETTINGS ack", "RST s=1 7", ...).
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <trellis/codec/http2/http2_frame_codec.hpp>
#include <trellis/codec/http2/http2_frame_reader.hpp>
#include <trellis/codec/http2/http2_frame_writer.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/testing/embedded_channel.hpp>

namespace trellis::http2::test {

inline std::string headers_text(const Http2Headers& h) {
  std::string s = "[";
  for (std::size_t i = 0; i < h.size(); ++i) {
    const auto f = h[i];
    if (i != 0) s += ",";
    s += std::string(f.name) + "=" + std::string(f.value);
  }
  return s + "]";
}

// Every frame parsed, as text.
struct FrameText : Http2FrameListener {
  std::vector<std::string> frames;
  void on_data(Http2DataFrame& f) override {
    frames.push_back("DATA s=" + std::to_string(f.stream_id) + (f.end_stream ? " end" : "") + " " +
                     std::to_string(f.data.readable_bytes()));
  }
  void on_headers(Http2HeadersFrame& f) override {
    frames.push_back("HEADERS s=" + std::to_string(f.stream_id) + (f.end_stream ? " end" : "") +
                     " " + headers_text(f.headers));
  }
  void on_reset(Http2ResetFrame& f) override {
    frames.push_back("RST s=" + std::to_string(f.stream_id) + " " +
                     std::string(http2_error_name(f.error_code)));
  }
  void on_settings(Http2SettingsFrame& f) override {
    std::string s = f.ack ? "SETTINGS ack" : "SETTINGS";
    for (const auto& x : f.settings)
      s += " " + std::to_string(x.id) + "=" + std::to_string(x.value);
    frames.push_back(s);
  }
  void on_ping(Http2PingFrame& f) override {
    frames.push_back(std::string(f.ack ? "PING ack " : "PING ") + std::to_string(f.opaque_data));
  }
  void on_go_away(Http2GoAwayFrame& f) override {
    frames.push_back("GOAWAY " + std::to_string(f.last_stream_id) + " " +
                     std::string(http2_error_name(f.error_code)));
  }
  void on_window_update(Http2WindowUpdateFrame& f) override {
    frames.push_back("WINDOW_UPDATE s=" + std::to_string(f.stream_id) + " " +
                     std::to_string(f.increment));
  }
  void on_unknown(Http2UnknownFrame& f) override {
    frames.push_back("UNKNOWN " + std::to_string(f.type));
  }
};

// Takes every message the channel wrote out, as one byte string.
inline ByteBuf take_outbound(EmbeddedChannel& ch) {
  ByteBuf all = ByteBuf::from("");
  while (auto m = ch.read_outbound()) {
    if (auto* c = m->try_get<CompositeByteBuf>()) {
      all.write_bytes(c->consolidate());
    } else if (auto* b = m->try_get<ByteBuf>()) {
      all.write_bytes(*b);
    } else {
      FAIL("an outbound message that is not bytes: " << m->type_name());
    }
  }
  return all;
}

// A request header list.
inline Http2Headers request(std::string_view path = "/", std::string_view method = "GET") {
  return Http2Headers{
      {":method", method}, {":scheme", "https"}, {":path", path}, {":authority", "example.com"}};
}

// A response header list.
inline Http2Headers response(std::string_view status = "200") {
  return Http2Headers{{":status", status}};
}

// A HEADERS frame message.
inline Http2HeadersFrame headers_frame(std::uint32_t id, Http2Headers h, bool end_stream) {
  Http2HeadersFrame f;
  f.stream_id = id;
  f.headers = std::move(h);
  f.end_stream = end_stream;
  return f;
}

// A DATA frame message.
inline Http2DataFrame data_frame(std::uint32_t id, std::string_view bytes, bool end_stream) {
  Http2DataFrame f;
  f.stream_id = id;
  f.data = ByteBuf::from(bytes);
  f.end_stream = end_stream;
  return f;
}

// A server-side codec and the client across from it.
struct ServerPeer {
  std::shared_ptr<Http2FrameCodec> codec;
  EmbeddedChannel ch;
  Http2FrameWriter writer;  // the client's
  Http2FrameReader reader{{.role = Http2Role::kClient}};
  ByteBuf pending = ByteBuf::from("");

  explicit ServerPeer(Http2FrameCodecOptions options = {})
      : codec(std::make_shared<Http2FrameCodec>(options)), ch(codec) {
    ch.freeze_time();
  }

  // Writes frames built by `fn` to the codec.
  template <class F>
  void send(F&& fn) {
    CompositeByteBuf out;
    fn(out);
    ch.write_inbound(out.consolidate());
  }
  void send_raw(std::string_view bytes) { ch.write_inbound(ByteBuf::from(bytes)); }

  // The frames the codec sent since the last call.
  std::vector<std::string> frames() {
    FrameText text;
    pending.write_bytes(take_outbound(ch));
    reader.read(pending, text);
    return text.frames;
  }

  // The preface and an empty SETTINGS, the codec's SETTINGS acknowledged, the output drained.
  void handshake(std::vector<Http2Setting> settings = {}) {
    send([&](CompositeByteBuf& out) {
      writer.write_preface(out);
      writer.write_settings(out, settings);
      writer.write_settings_ack(out);
    });
    frames();
    while (auto m = ch.read_inbound()) {
    }
    ch.user_events().clear();
  }

  void headers(std::uint32_t id, const Http2Headers& h, bool end_stream) {
    send([&](CompositeByteBuf& out) { writer.write_headers(out, id, h, end_stream); });
  }
  // DATA frames of at most 16384 octets carrying `bytes` (END_STREAM on the last).
  void data(std::uint32_t id, std::string_view bytes, bool end_stream, std::uint32_t pad = 0) {
    do {
      const std::string_view part = bytes.substr(0, 16384 - pad);
      bytes.remove_prefix(part.size());
      send([&](CompositeByteBuf& out) {
        writer.write_data(out, id, ByteBuf::from(part), end_stream && bytes.empty(), pad);
      });
    } while (!bytes.empty() && ch.is_open());
  }
  void raw_frame(std::uint8_t type, std::uint8_t flags, std::uint32_t id,
                 std::string_view payload = {}) {
    send([&](CompositeByteBuf& out) {
      writer.write_frame(out, type, flags, id,
                         std::as_bytes(std::span<const char>(payload.data(), payload.size())));
    });
  }

  // The messages the codec read, in order.
  std::vector<Message> inbound() {
    std::vector<Message> out;
    while (auto m = ch.read_inbound()) out.push_back(std::move(*m));
    return out;
  }
};

inline std::string u32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

}  // namespace trellis::http2::test

namespace doctest {
template <>
struct StringMaker<std::vector<std::string>> {
  static String convert(const std::vector<std::string>& v) {
    std::string s = "{";
    for (const auto& x : v) s += "\"" + x + "\" ";
    return String((s + "}").c_str());
  }
};
}  // namespace doctest
