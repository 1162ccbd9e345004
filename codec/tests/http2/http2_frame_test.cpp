// HTTP/2 frame layer (RFC 9113 §3.4, §4, §6): every per-frame rule a peer can break through
// Http2FrameReader (error code, connection or stream error), the preface and first SETTINGS,
// CONTINUATION sequencing and bounds, round trips of every frame type through Http2FrameWriter
// and the reader over random splits of the byte stream, max frame size changes, and the
// allocation budget of DATA and HEADERS in steady state.
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <trellis/codec/http2/hpack_encoder.hpp>
#include <trellis/codec/http2/http2_frame_reader.hpp>
#include <trellis/codec/http2/http2_frame_writer.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>
#include <trellis/pipeline/error.hpp>
#include <trellis/testing/allocation_counter.hpp>

using namespace trellis;
using namespace trellis::http2;

namespace {

std::span<const std::byte> bytes_of(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

// A frame on the wire; `length` overrides the payload's length in the header.
std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                  std::string_view payload = {}, std::optional<std::uint32_t> length = {}) {
  const std::uint32_t n = length.value_or(static_cast<std::uint32_t>(payload.size()));
  std::string out;
  out.push_back(static_cast<char>(n >> 16));
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(n));
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  out.push_back(static_cast<char>(stream >> 24));
  out.push_back(static_cast<char>(stream >> 16));
  out.push_back(static_cast<char>(stream >> 8));
  out.push_back(static_cast<char>(stream));
  out.append(payload);
  return out;
}

std::string u32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}
std::string setting(std::uint16_t id, std::uint32_t value) {
  return std::string{static_cast<char>(id >> 8), static_cast<char>(id)} + u32(value);
}

constexpr std::uint8_t kData = 0, kHeaders = 1, kPriority = 2, kRst = 3, kSettings = 4,
                       kPushPromise = 5, kPing = 6, kGoAway = 7, kWindowUpdate = 8,
                       kContinuation = 9;

// An HPACK block of a small request (fresh encoder: no dynamic table state needed).
std::string request_block(std::string_view path = "/") {
  HpackEncoder e({.max_table_size = 0});
  ByteBuf out = ByteBuf::from("");
  const std::vector<HpackHeader> h = {
      {":method", "GET"}, {":scheme", "https"}, {":path", path}, {":authority", "a.example"}};
  e.encode(h, out);
  return out.to_string();
}

// Every frame the reader delivers, as text.
struct Recorder : Http2FrameListener {
  std::vector<std::string> events;

  static std::string headers_text(const Http2Headers& h) {
    std::string s = "[";
    for (std::size_t i = 0; i < h.size(); ++i) {
      const auto f = h[i];
      if (i != 0) s += ",";
      s += std::string(f.name) + "=" + std::string(f.value) + (f.sensitive ? "!" : "");
    }
    return s + "]";
  }
  void on_data(Http2DataFrame& f) override {
    events.push_back("DATA s=" + std::to_string(f.stream_id) +
                     " end=" + std::to_string(f.end_stream) + " pad=" + std::to_string(f.padding) +
                     " " + f.data.to_string());
  }
  void on_headers(Http2HeadersFrame& f) override {
    std::string p = "-";
    if (f.priority) {
      p = std::to_string(f.priority->stream_dependency) + "/" + std::to_string(f.priority->weight) +
          "/" + std::to_string(f.priority->exclusive);
    }
    events.push_back("HEADERS s=" + std::to_string(f.stream_id) +
                     " end=" + std::to_string(f.end_stream) + " prio=" + p +
                     " pad=" + std::to_string(f.padding) + " " + headers_text(f.headers));
  }
  void on_priority(Http2PriorityFrame& f) override {
    events.push_back("PRIORITY s=" + std::to_string(f.stream_id) + " " +
                     std::to_string(f.priority.stream_dependency) + "/" +
                     std::to_string(f.priority.weight) + "/" +
                     std::to_string(f.priority.exclusive));
  }
  void on_reset(Http2ResetFrame& f) override {
    events.push_back("RST s=" + std::to_string(f.stream_id) + " " +
                     std::to_string(static_cast<std::uint32_t>(f.error_code)));
  }
  void on_settings(Http2SettingsFrame& f) override {
    std::string s = f.ack ? "SETTINGS ack" : "SETTINGS";
    for (const auto& x : f.settings)
      s += " " + std::to_string(x.id) + "=" + std::to_string(x.value);
    events.push_back(s);
  }
  void on_push_promise(Http2PushPromiseFrame& f) override {
    events.push_back("PUSH_PROMISE s=" + std::to_string(f.stream_id) +
                     " p=" + std::to_string(f.promised_stream_id) +
                     " pad=" + std::to_string(f.padding) + " " + headers_text(f.headers));
  }
  void on_ping(Http2PingFrame& f) override {
    events.push_back("PING ack=" + std::to_string(f.ack) + " " + std::to_string(f.opaque_data));
  }
  void on_go_away(Http2GoAwayFrame& f) override {
    events.push_back("GOAWAY last=" + std::to_string(f.last_stream_id) + " " +
                     std::to_string(static_cast<std::uint32_t>(f.error_code)) + " " +
                     f.debug_data.to_string());
  }
  void on_window_update(Http2WindowUpdateFrame& f) override {
    events.push_back("WINDOW_UPDATE s=" + std::to_string(f.stream_id) + " " +
                     std::to_string(f.increment));
  }
  void on_unknown(Http2UnknownFrame& f) override {
    events.push_back("UNKNOWN t=" + std::to_string(f.type) + " f=" + std::to_string(f.flags) +
                     " s=" + std::to_string(f.stream_id) + " " + f.payload.to_string());
  }
};

Http2FrameReaderOptions mid_connection(Http2Role role = Http2Role::kServer) {
  return {.role = role, .check_connection_start = false};
}

// What read() threw.
struct Outcome {
  enum Kind { kNone, kConnection, kStream } kind = kNone;
  Http2Error code = Http2Error::kNoError;
  std::uint32_t stream = 0;
  std::string what;
};

Outcome feed(Http2FrameReader& reader, std::string_view wire, Recorder& rec) {
  ByteBuf in = ByteBuf::from(wire);
  Outcome o;
  try {
    reader.read(in, rec);
  } catch (const Http2StreamError& e) {
    o = {Outcome::kStream, e.code(), e.stream(), e.what()};
  } catch (const Http2ConnectionError& e) {
    o = {Outcome::kConnection, e.code(), 0, e.what()};
  }
  return o;
}

Outcome feed(std::string_view wire, Http2Role role = Http2Role::kServer) {
  Http2FrameReader reader(mid_connection(role));
  Recorder rec;
  return feed(reader, wire, rec);
}

void check_connection_error(const Outcome& o, Http2Error code) {
  INFO(o.what);
  CHECK(o.kind == Outcome::kConnection);
  CHECK(o.code == code);
}

void check_stream_error(const Outcome& o, Http2Error code, std::uint32_t stream) {
  INFO(o.what);
  CHECK(o.kind == Outcome::kStream);
  CHECK(o.code == code);
  CHECK(o.stream == stream);
}

void check_ok(const Outcome& o) {
  INFO(o.what);
  CHECK(o.kind == Outcome::kNone);
}

// Reads `wire` in chunks of random sizes (1..max_chunk) through a cumulation buffer.
std::vector<std::string> read_split(Http2FrameReader& reader, std::string_view wire,
                                    std::mt19937& rng, std::size_t max_chunk) {
  Recorder rec;
  ByteBuf cumulation = ByteBufAllocator::default_allocator().buffer(256);
  std::size_t pos = 0;
  while (pos < wire.size()) {
    const std::size_t n = std::min<std::size_t>(
        wire.size() - pos, std::uniform_int_distribution<std::size_t>(1, max_chunk)(rng));
    cumulation.write_bytes(bytes_of(wire.substr(pos, n)));
    pos += n;
    reader.read(cumulation, rec);
  }
  CHECK(cumulation.readable_bytes() == 0);
  return rec.events;
}

std::string wire_of(CompositeByteBuf& out) { return out.to_string(); }

}  // namespace

TEST_CASE("http2 frames: a frame above the max frame size is a FRAME_SIZE_ERROR from its header") {
  Http2FrameReader reader(mid_connection());
  Recorder rec;
  // Only the header has arrived: the length alone is enough.
  const std::string header = frame(kData, 0, 1, {}, 16385).substr(0, 9);
  check_connection_error(feed(reader, header, rec), Http2Error::kFrameSizeError);
  // A reader that failed refuses to go on.
  check_connection_error(feed(reader, frame(kPing, 0, 0, std::string(8, 'x')), rec),
                         Http2Error::kProtocolError);
  CHECK(rec.events.empty());
  // Exactly the maximum is fine.
  check_ok(feed(frame(kData, 0, 1, std::string(16384, 'd'))));
}

TEST_CASE("http2 frames: the max frame size can be raised up to 2^24-1") {
  Http2FrameReader reader(mid_connection());
  Recorder rec;
  CHECK_THROWS_AS(reader.set_max_frame_size(16383), InvalidArgumentError);
  CHECK_THROWS_AS(reader.set_max_frame_size(16777216), InvalidArgumentError);
  CHECK_THROWS_AS(Http2FrameReader({.max_frame_size = 100}), InvalidArgumentError);
  reader.set_max_frame_size(100000);
  check_ok(feed(reader, frame(kData, 0, 1, std::string(100000, 'd')), rec));
  REQUIRE(rec.events.size() == 1);
  check_connection_error(feed(reader, frame(kData, 0, 1, {}, 100001).substr(0, 9), rec),
                         Http2Error::kFrameSizeError);
  Http2FrameReader big({.check_connection_start = false, .max_frame_size = 16777215});
  check_ok(feed(big, frame(kData, 0, 1, {}, 16777215).substr(0, 9), rec));
}

TEST_CASE("http2 frames: stream-bound frames on stream 0 are PROTOCOL_ERRORs") {
  const std::string block = request_block();
  check_connection_error(feed(frame(kData, 0, 0, "x")), Http2Error::kProtocolError);
  check_connection_error(feed(frame(kHeaders, 4, 0, block)), Http2Error::kProtocolError);
  check_connection_error(feed(frame(kContinuation, 4, 0, block)), Http2Error::kProtocolError);
  check_connection_error(feed(frame(kRst, 0, 0, u32(8))), Http2Error::kProtocolError);
  check_connection_error(feed(frame(kPriority, 0, 0, u32(3) + "\x10")), Http2Error::kProtocolError);
  check_connection_error(feed(frame(kPushPromise, 4, 0, u32(2) + block), Http2Role::kClient),
                         Http2Error::kProtocolError);
  // WINDOW_UPDATE is fine on stream 0 (the connection's window).
  check_ok(feed(frame(kWindowUpdate, 0, 0, u32(1))));
}

TEST_CASE("http2 frames: connection frames on a stream are PROTOCOL_ERRORs") {
  check_connection_error(feed(frame(kSettings, 0, 1)), Http2Error::kProtocolError);
  check_connection_error(feed(frame(kSettings, 1, 3)), Http2Error::kProtocolError);
  check_connection_error(feed(frame(kPing, 0, 1, std::string(8, 'p'))), Http2Error::kProtocolError);
  check_connection_error(feed(frame(kGoAway, 0, 1, u32(0) + u32(0))), Http2Error::kProtocolError);
}

TEST_CASE("http2 frames: wrong fixed lengths are FRAME_SIZE_ERRORs") {
  check_connection_error(feed(frame(kSettings, 0, 0, std::string(5, '\0'))),
                         Http2Error::kFrameSizeError);
  check_connection_error(feed(frame(kSettings, 0, 0, std::string(13, '\0'))),
                         Http2Error::kFrameSizeError);
  check_connection_error(feed(frame(kSettings, 1, 0, setting(1, 0))), Http2Error::kFrameSizeError);
  check_connection_error(feed(frame(kPing, 0, 0, std::string(7, 'p'))),
                         Http2Error::kFrameSizeError);
  check_connection_error(feed(frame(kPing, 1, 0, std::string(9, 'p'))),
                         Http2Error::kFrameSizeError);
  check_connection_error(feed(frame(kRst, 0, 1, std::string(3, '\0'))),
                         Http2Error::kFrameSizeError);
  check_connection_error(feed(frame(kRst, 0, 1, std::string(5, '\0'))),
                         Http2Error::kFrameSizeError);
  check_connection_error(feed(frame(kWindowUpdate, 0, 1, std::string(3, '\1'))),
                         Http2Error::kFrameSizeError);
  check_connection_error(feed(frame(kWindowUpdate, 0, 0, std::string(5, '\1'))),
                         Http2Error::kFrameSizeError);
  check_connection_error(feed(frame(kGoAway, 0, 0, std::string(7, '\0'))),
                         Http2Error::kFrameSizeError);
  // PRIORITY of the wrong length is a stream error (§6.3), and the reader goes on.
  Http2FrameReader reader(mid_connection());
  Recorder rec;
  check_stream_error(feed(reader, frame(kPriority, 0, 5, std::string(4, '\0')), rec),
                     Http2Error::kFrameSizeError, 5);
  check_stream_error(feed(reader, frame(kPriority, 0, 7, std::string(6, '\0')), rec),
                     Http2Error::kFrameSizeError, 7);
  check_ok(feed(reader, frame(kPing, 0, 0, std::string(8, '\0')), rec));
  CHECK(rec.events == std::vector<std::string>{"PING ack=0 0"});
}

TEST_CASE("http2 frames: padding must be shorter than the payload") {
  const std::string block = request_block();
  // DATA: Pad Length 3 with 3 octets after it is fine (no data); 4 is not.
  Http2FrameReader reader(mid_connection());
  Recorder rec;
  check_ok(feed(reader, frame(kData, 8, 1, std::string("\3") + std::string(3, '\0')), rec));
  CHECK(rec.events == std::vector<std::string>{"DATA s=1 end=0 pad=4 "});
  check_connection_error(feed(frame(kData, 8, 1, std::string("\4") + std::string(3, '\0'))),
                         Http2Error::kProtocolError);
  check_connection_error(feed(frame(kData, 8, 1, std::string(1, '\1'))),
                         Http2Error::kProtocolError);
  // A padded frame with no room for the Pad Length field.
  check_connection_error(feed(frame(kData, 8, 1)), Http2Error::kFrameSizeError);
  // HEADERS: padding over the block, and with PRIORITY the 5 octets count too.
  check_connection_error(
      feed(frame(kHeaders, 4 | 8, 1, std::string(1, char(block.size() + 1)) + block)),
      Http2Error::kProtocolError);
  check_connection_error(
      feed(frame(kHeaders, 4 | 8 | 0x20, 1, "\2" + u32(0) + "\x0f" + std::string(1, '\0'))),
      Http2Error::kProtocolError);
  check_connection_error(feed(frame(kHeaders, 4 | 0x20, 1, u32(0))), Http2Error::kFrameSizeError);
  // PUSH_PROMISE: the promised stream id counts too.
  check_connection_error(feed(frame(kPushPromise, 4 | 8, 1, "\1" + u32(2)), Http2Role::kClient),
                         Http2Error::kProtocolError);
  check_connection_error(feed(frame(kPushPromise, 4, 1, "\0\0\2"), Http2Role::kClient),
                         Http2Error::kFrameSizeError);
}

TEST_CASE("http2 frames: WINDOW_UPDATE with increment 0") {
  Http2FrameReader reader(mid_connection());
  Recorder rec;
  check_stream_error(feed(reader, frame(kWindowUpdate, 0, 3, u32(0)), rec),
                     Http2Error::kProtocolError, 3);
  // The reserved bit is not part of the increment.
  check_stream_error(feed(reader, frame(kWindowUpdate, 0, 3, u32(0x80000000u)), rec),
                     Http2Error::kProtocolError, 3);
  check_ok(feed(reader, frame(kWindowUpdate, 0, 3, u32(0xffffffffu)), rec));
  CHECK(rec.events == std::vector<std::string>{"WINDOW_UPDATE s=3 2147483647"});
  check_connection_error(feed(reader, frame(kWindowUpdate, 0, 0, u32(0)), rec),
                         Http2Error::kProtocolError);
}

TEST_CASE("http2 frames: SETTINGS values out of range") {
  check_connection_error(feed(frame(kSettings, 0, 0, setting(2, 2))), Http2Error::kProtocolError);
  check_connection_error(feed(frame(kSettings, 0, 0, setting(4, 0x80000000u))),
                         Http2Error::kFlowControlError);
  check_connection_error(feed(frame(kSettings, 0, 0, setting(5, 16383))),
                         Http2Error::kProtocolError);
  check_connection_error(feed(frame(kSettings, 0, 0, setting(5, 16777216))),
                         Http2Error::kProtocolError);
  // A server may not enable push (§6.5.2): a client reader refuses it; a server reader takes it.
  check_connection_error(feed(frame(kSettings, 0, 0, setting(2, 1)), Http2Role::kClient),
                         Http2Error::kProtocolError);
  Http2FrameReader reader(mid_connection());
  Recorder rec;
  check_ok(
      feed(reader,
           frame(kSettings, 0, 0,
                 setting(1, 0) + setting(2, 1) + setting(3, 100) + setting(4, 0x7fffffff) +
                     setting(5, 16384) + setting(5, 16777215) + setting(6, 1) + setting(0x99, 7)) +
               frame(kSettings, 1, 0),
           rec));
  CHECK(rec.events == std::vector<std::string>{"SETTINGS 1=0 2=1 3=100 4=2147483647 5=16384 "
                                               "5=16777215 6=1 153=7",
                                               "SETTINGS ack"});
}

TEST_CASE("http2 frames: PUSH_PROMISE sent to a server") {
  check_connection_error(feed(frame(kPushPromise, 4, 1, u32(2) + request_block())),
                         Http2Error::kProtocolError);
  Http2FrameReader client(mid_connection(Http2Role::kClient));
  Recorder rec;
  check_ok(feed(client, frame(kPushPromise, 4, 1, u32(0x80000002u) + request_block("/p")), rec));
  CHECK(rec.events ==
        std::vector<std::string>{"PUSH_PROMISE s=1 p=2 pad=0 [:method=GET,:scheme=https,:path=/"
                                 "p,:authority=a.example]"});
  check_connection_error(
      feed(frame(kPushPromise, 4, 1, u32(0) + request_block()), Http2Role::kClient),
      Http2Error::kProtocolError);
}

TEST_CASE("http2 frames: unknown types, unknown flags and the reserved bit are ignored") {
  Http2FrameReader reader(mid_connection());
  Recorder rec;
  check_ok(feed(reader,
                frame(0x42, 0xff, 0x80000007u, "ext") + frame(kData, 0xf6, 0x80000001u, "d") +
                    frame(kPing, 0xfe, 0, std::string(7, '\0') + "\1") +
                    frame(kRst, 0xff, 1, u32(0x1234)),
                rec));
  CHECK(rec.events == std::vector<std::string>{"UNKNOWN t=66 f=255 s=7 ext",
                                               "DATA s=1 end=0 pad=0 d", "PING ack=0 1",
                                               "RST s=1 4660"});
}

TEST_CASE("http2 frames: the client preface and the first SETTINGS") {
  const std::string settings = frame(kSettings, 0, 0, setting(3, 100));
  std::mt19937 rng(7);
  {
    Http2FrameReader reader;  // a server
    CHECK(read_split(reader, std::string(kHttp2ClientPreface) + settings, rng, 3) ==
          std::vector<std::string>{"SETTINGS 3=100"});
  }
  {
    Http2FrameReader reader;
    Recorder rec;
    // The mismatch is seen at the first wrong byte, before the rest arrives.
    check_connection_error(feed(reader, "PRI * HTTP/1.1", rec), Http2Error::kProtocolError);
    check_connection_error(feed(reader, std::string(kHttp2ClientPreface) + settings, rec),
                           Http2Error::kProtocolError);
  }
  check_connection_error(
      [&] {
        Http2FrameReader reader;
        Recorder rec;
        return feed(reader, "GET / HTTP/1.1\r\n\r\n" + settings, rec);
      }(),
      Http2Error::kProtocolError);
  for (const std::string& first : {frame(kSettings, 1, 0), frame(kPing, 0, 0, std::string(8, '\0')),
                                   frame(kWindowUpdate, 0, 0, u32(10)), frame(0x42, 0, 0)}) {
    Http2FrameReader server;
    Recorder rec;
    check_connection_error(feed(server, std::string(kHttp2ClientPreface) + first, rec),
                           Http2Error::kProtocolError);
    Http2FrameReader client({.role = Http2Role::kClient});
    check_connection_error(feed(client, first, rec), Http2Error::kProtocolError);
  }
  // A client reader expects no preface, only SETTINGS first.
  Http2FrameReader client({.role = Http2Role::kClient});
  Recorder rec;
  check_ok(feed(client, settings + frame(kPing, 0, 0, std::string(8, '\0')), rec));
  CHECK(rec.events.size() == 2);
  Http2FrameReader client2({.role = Http2Role::kClient});
  // (to a client, the preface reads as a frame header of 0x505249 octets)
  check_connection_error(feed(client2, std::string(kHttp2ClientPreface) + settings, rec),
                         Http2Error::kFrameSizeError);
}

TEST_CASE("http2 frames: CONTINUATION sequencing") {
  const std::string block = request_block("/continued");
  const std::string a = block.substr(0, 5), b = block.substr(5, 7), c = block.substr(12);
  const std::string expected =
      "HEADERS s=3 end=1 prio=- pad=0 [:method=GET,:scheme=https,:path=/"
      "continued,:authority=a.example]";
  {
    Http2FrameReader reader(mid_connection());
    Recorder rec;
    check_ok(feed(reader,
                  frame(kHeaders, 1, 3, a) + frame(kContinuation, 0, 3, b) +
                      frame(kContinuation, 0, 3, {}) + frame(kContinuation, 4, 3, c) +
                      frame(kData, 1, 3, "x"),
                  rec));
    CHECK(rec.events == std::vector<std::string>{expected, "DATA s=3 end=1 pad=0 x"});
    CHECK_FALSE(reader.in_header_block());
  }
  // Anything but CONTINUATION on the same stream in between is a connection error.
  for (const std::string& intruder :
       {frame(kData, 0, 3, "x"), frame(kContinuation, 4, 5, c), frame(kContinuation, 4, 0, c),
        frame(kPing, 0, 0, std::string(8, '\0')), frame(0x42, 0, 3, "x"),
        frame(kHeaders, 4, 3, block), frame(kSettings, 1, 0)}) {
    Http2FrameReader reader(mid_connection());
    Recorder rec;
    check_connection_error(feed(reader, frame(kHeaders, 0, 3, a) + intruder, rec),
                           Http2Error::kProtocolError);
    CHECK(rec.events.empty());
  }
  // CONTINUATION with no open block, and after a block that ended.
  check_connection_error(feed(frame(kContinuation, 4, 3, block)), Http2Error::kProtocolError);
  check_connection_error(feed(frame(kHeaders, 4, 3, block) + frame(kContinuation, 4, 3, c)),
                         Http2Error::kProtocolError);
  // Padding and priority of the HEADERS frame are kept across its CONTINUATIONs.
  Http2FrameReader reader(mid_connection());
  Recorder rec;
  check_ok(feed(
      reader,
      frame(kHeaders, 0x20 | 8, 3, "\2" + u32(0x80000001u) + "\xff" + a + std::string(2, '\0')) +
          frame(kContinuation, 4, 3, b + c),
      rec));
  CHECK(rec.events == std::vector<std::string>{
                          "HEADERS s=3 end=0 prio=1/256/1 pad=3 [:method=GET,:scheme=https,:path=/"
                          "continued,:authority=a.example]"});
}

TEST_CASE("http2 frames: the header block size is bounded") {
  Http2FrameReader reader({.check_connection_start = false, .max_header_list_size = 1000});
  CHECK(reader.max_header_block_size() == 1000 + 16384);
  reader.set_max_header_block_size(100);
  CHECK(reader.max_header_block_size() == 100);
  Recorder rec;
  // 60 + 40 octets is the limit; one more ends the connection.
  std::string wire = frame(kHeaders, 0, 1, std::string(60, '\x82'));
  check_ok(feed(reader, wire + frame(kContinuation, 0, 1, std::string(40, '\x82')), rec));
  check_connection_error(feed(reader, frame(kContinuation, 0, 1, "\x82"), rec),
                         Http2Error::kEnhanceYourCalm);
  CHECK(rec.events.empty());
  // A block in one frame counts as well (HEADERS and PUSH_PROMISE).
  Http2FrameReader one({.check_connection_start = false, .max_header_block_size = 100});
  check_ok(feed(one, frame(kHeaders, 4, 1, std::string(100, '\x82')), rec));
  CHECK(rec.events.size() == 1);
  check_connection_error(feed(one, frame(kHeaders, 4, 3, std::string(101, '\x82')), rec),
                         Http2Error::kEnhanceYourCalm);
  Http2FrameReader client(
      {.role = Http2Role::kClient, .check_connection_start = false, .max_header_block_size = 100});
  check_connection_error(
      feed(client, frame(kPushPromise, 4, 1, u32(2) + std::string(101, '\x82')), rec),
      Http2Error::kEnhanceYourCalm);
}

TEST_CASE("http2 frames: HPACK errors and header list limits") {
  // Index 0 is invalid HPACK: COMPRESSION_ERROR for the connection.
  check_connection_error(feed(frame(kHeaders, 4, 1, "\x80")), Http2Error::kCompressionError);
  check_connection_error(feed(frame(kHeaders, 0, 1, "\x82") + frame(kContinuation, 4, 1, "\x80")),
                         Http2Error::kCompressionError);
  // A list over the limit is a stream error; the HPACK state stays in step and reading goes on.
  Http2FrameReader reader({.check_connection_start = false, .max_header_list_size = 100});
  Recorder rec;
  HpackEncoder enc({.indexing = HpackIndexing::kAll});
  ByteBuf big = ByteBuf::from("");
  const std::string v80(80, 'v');
  const std::vector<HpackHeader> fields = {{":method", "GET"}, {"x-big", v80}};
  enc.encode(fields, big);
  ByteBuf small = ByteBuf::from("");
  const std::vector<HpackHeader> again = {{"x-big", v80}};
  reader.set_max_header_list_size(100);
  Outcome o = feed(reader, frame(kHeaders, 4, 1, big.to_string()), rec);
  check_stream_error(o, Http2Error::kProtocolError, 1);
  bool typed = false;
  try {
    ByteBuf in = ByteBuf::from(frame(kHeaders, 4, 3, big.to_string()));
    reader.read(in, rec);
  } catch (const Http2HeaderListTooLargeError& e) {
    typed = e.stream() == 3;
  }
  CHECK(typed);
  reader.set_max_header_list_size(1000);
  enc.encode(again, small);  // indexed now: refers to the dynamic table entry
  CHECK(small.readable_bytes() < 4);
  check_ok(feed(reader, frame(kHeaders, 4, 5, small.to_string()), rec));
  REQUIRE(rec.events.size() == 1);
  CHECK(rec.events[0] == "HEADERS s=5 end=0 prio=- pad=0 [x-big=" + std::string(80, 'v') + "]");
}

TEST_CASE("http2 frames: a stream depending on itself and misplaced pseudo-headers") {
  Http2FrameReader reader(mid_connection());
  Recorder rec;
  check_stream_error(feed(reader, frame(kPriority, 0, 5, u32(5) + "\x10"), rec),
                     Http2Error::kProtocolError, 5);
  check_stream_error(
      feed(reader, frame(kHeaders, 4 | 0x20, 7, u32(0x80000007u) + "\x10" + request_block()), rec),
      Http2Error::kProtocolError, 7);
  // regular field (literal "a: b"), then :method GET (index 2).
  check_stream_error(feed(reader,
                          frame(kHeaders, 4, 9,
                                std::string("\x00\x01"
                                            "a\x01"
                                            "b\x82",
                                            6)),
                          rec),
                     Http2Error::kProtocolError, 9);
  check_ok(feed(reader, frame(kPriority, 0, 5, u32(0x80000003u) + "\x10"), rec));
  CHECK(rec.events == std::vector<std::string>{"PRIORITY s=5 3/17/1"});
}

TEST_CASE("http2 frames: every frame type round-trips through writer and reader") {
  Http2FrameWriter writer;
  CompositeByteBuf out;
  Http2Headers request{{"user-agent", "trellis"},     {":method", "POST"},
                       {":scheme", "https"},          {":path", "/upload"},
                       {":authority", "example.com"}, {"authorization", "secret", true}};
  CHECK(request.pseudo_header_count() == 4);
  CHECK(request[0].name == ":method");
  CHECK(request[4].name == "user-agent");
  writer.write_preface(out);
  const Http2Setting settings[] = {{1, 8192}, {3, 100}, {4, 1 << 20}, {0x77, 1}};
  writer.write_settings(out, settings);
  writer.write_settings_ack(out);
  writer.write_headers(out, 1, request, false);
  writer.write_headers(out, 3, request, true, Http2Priority{1, 200, true}, 17);
  writer.write_data(out, 1, ByteBuf::from("hello"), false);
  writer.write_data(out, 1, ByteBuf::from("padded"), true, 256);
  writer.write_data(out, 5, ByteBuf::from(""), true, 1);
  writer.write_priority(out, 7, {3, 1, false});
  writer.write_rst_stream(out, 3, Http2Error::kCancel);
  writer.write_ping(out, false, 0x0102030405060708ull);
  writer.write_ping(out, true, 42);
  writer.write_window_update(out, 0, 65535);
  writer.write_window_update(out, 1, 0x7fffffff);
  writer.write_go_away(out, 3, Http2Error::kEnhanceYourCalm, bytes_of("calm down"));
  writer.write_frame(out, 0xbb, 0x5, 9, bytes_of("opaque"));
  const std::string wire = wire_of(out);

  Http2FrameWriter push_writer;
  CompositeByteBuf push_out;
  push_writer.write_settings(push_out, {});
  push_writer.write_push_promise(push_out, 1, 2, request, 10);
  const std::string push_wire = wire_of(push_out);

  const std::string req =
      "[:method=POST,:scheme=https,:path=/upload,:authority=example.com,user-agent=trellis,"
      "authorization=secret!]";
  const std::vector<std::string> expected = {
      "SETTINGS 1=8192 3=100 4=1048576 119=1",
      "SETTINGS ack",
      "HEADERS s=1 end=0 prio=- pad=0 " + req,
      "HEADERS s=3 end=1 prio=1/200/1 pad=17 " + req,
      "DATA s=1 end=0 pad=0 hello",
      "DATA s=1 end=1 pad=256 padded",
      "DATA s=5 end=1 pad=1 ",
      "PRIORITY s=7 3/1/0",
      "RST s=3 8",
      "PING ack=0 72623859790382856",
      "PING ack=1 42",
      "WINDOW_UPDATE s=0 65535",
      "WINDOW_UPDATE s=1 2147483647",
      "GOAWAY last=3 11 calm down",
      "UNKNOWN t=187 f=5 s=9 opaque",
  };
  std::mt19937 rng(20261207);
  for (int round = 0; round < 50; ++round) {
    Http2FrameReader reader;  // a server: preface and SETTINGS first
    CHECK(read_split(reader, wire, rng, round < 25 ? 7 : 300) == expected);
    Http2FrameReader client({.role = Http2Role::kClient});
    CHECK(read_split(client, push_wire, rng, round < 25 ? 5 : 100) ==
          std::vector<std::string>{"SETTINGS", "PUSH_PROMISE s=1 p=2 pad=10 " + req});
  }
}

TEST_CASE("http2 frames: a large header list is split into HEADERS + CONTINUATION") {
  Http2FrameWriter writer({.max_table_size = 0, .huffman = HpackHuffman::kNever});
  Http2Headers headers{{":method", "GET"}, {":path", "/"}};
  for (int i = 0; i < 8; ++i)
    headers.add("x-field-" + std::to_string(i), std::string(5000, 'a' + i));
  CompositeByteBuf out;
  writer.write_headers(out, 1, headers, true, Http2Priority{0, 16, false}, 100);
  const std::string wire = wire_of(out);
  // Walk the frames: HEADERS (no END_HEADERS) of 16384, then CONTINUATIONs, the last one with it.
  std::vector<std::pair<int, int>> frames;  // (type, flags)
  std::size_t pos = 0;
  while (pos < wire.size()) {
    const auto len = (std::size_t(std::uint8_t(wire[pos])) << 16) |
                     (std::size_t(std::uint8_t(wire[pos + 1])) << 8) | std::uint8_t(wire[pos + 2]);
    CHECK(len <= 16384);
    if (frames.empty()) CHECK(len == 16384);
    frames.emplace_back(std::uint8_t(wire[pos + 3]), std::uint8_t(wire[pos + 4]));
    pos += 9 + len;
  }
  CHECK(pos == wire.size());
  REQUIRE(frames.size() == 3);
  CHECK(frames[0] == std::pair{1, 0x1 | 0x8 | 0x20});
  CHECK(frames[1] == std::pair{9, 0});
  CHECK(frames[2] == std::pair{9, 0x4});

  std::mt19937 rng(11);
  Http2FrameReader reader({.check_connection_start = false, .max_header_list_size = 1 << 20});
  const auto events = read_split(reader, wire, rng, 4000);
  REQUIRE(events.size() == 1);
  CHECK(events[0].starts_with(
      "HEADERS s=1 end=1 prio=0/16/0 pad=100 [:method=GET,:path=/,x-field-0="));

  // With a larger max frame size, one frame.
  writer.set_max_frame_size(65536);
  CHECK_THROWS_AS(writer.set_max_frame_size(16383), InvalidArgumentError);
  CompositeByteBuf one;
  writer.write_headers(one, 1, headers, true);
  const std::string wire1 = wire_of(one);
  CHECK(wire1.size() == 9 + ((std::size_t(std::uint8_t(wire1[1])) << 8) | std::uint8_t(wire1[2])) +
                            (std::size_t(std::uint8_t(wire1[0])) << 16));
  Http2FrameReader small_reader({.check_connection_start = false, .max_header_list_size = 1 << 20});
  check_connection_error(
      [&] {
        Recorder rec;
        return feed(small_reader, wire1, rec);
      }(),
      Http2Error::kFrameSizeError);
  Http2FrameReader big_reader({.check_connection_start = false, .max_header_list_size = 1 << 20});
  big_reader.set_max_frame_size(65536);
  CHECK(read_split(big_reader, wire1, rng, 9000).size() == 1);
}

TEST_CASE("http2 frames: DATA above the max frame size is refused by the writer") {
  Http2FrameWriter writer;
  CompositeByteBuf out;
  CHECK_THROWS_AS(writer.write_data(out, 1, ByteBuf::from(std::string(16385, 'x')), false),
                  InvalidArgumentError);
  CHECK_THROWS_AS(writer.write_data(out, 1, ByteBuf::from(std::string(16384, 'x')), false, 1),
                  InvalidArgumentError);
  CHECK_THROWS_AS(writer.write_data(out, 1, ByteBuf::from("x"), false, 257), InvalidArgumentError);
  CHECK_THROWS_AS(writer.write_window_update(out, 1, 0), InvalidArgumentError);
  CHECK(out.readable_bytes() == 0);
  writer.set_max_frame_size(16777215);
  writer.write_data(out, 1, ByteBuf::from(std::string(100000, 'x')), true);
  CHECK(out.readable_bytes() == 9 + 100000);
}

TEST_CASE("http2 frames: DATA payloads are slices, not copies") {
  Http2FrameWriter writer;
  CompositeByteBuf out;
  ByteBuf payload = ByteBuf::from(std::string(1024, 'p'));
  writer.write_data(out, 1, payload.slice(), false);
  REQUIRE(out.num_components() == 2);
  CHECK(out.component(1).data() == payload.data());
  // The reader's DATA is a slice of its input too.
  struct Catch : Http2FrameListener {
    const std::byte* seen = nullptr;
    void on_data(Http2DataFrame& f) override { seen = f.data.data(); }
  } c;
  ByteBuf in = ByteBuf::from(out.to_string());
  Http2FrameReader reader(mid_connection());
  reader.read(in, c);
  CHECK(c.seen == in.data() + 9);
}

TEST_CASE("http2 frames: DATA and HEADERS allocate nothing in steady state") {
  REQUIRE(testing::allocation_hook_installed());
  Http2FrameWriter writer;
  Http2FrameReader reader(mid_connection());
  const Http2Headers request{{":method", "GET"},
                             {":scheme", "https"},
                             {":path", "/index.html"},
                             {":authority", "www.example.com"},
                             {"user-agent", "Mozilla/5.0 (X11; Linux x86_64; rv:120.0)"},
                             {"accept", "text/html,application/xhtml+xml"},
                             {"accept-encoding", "gzip, deflate, br"}};
  ByteBuf payload = ByteBuf::from(std::string(1024, 'p'));
  ByteBuf wire = ByteBufAllocator::default_allocator().buffer(8192);
  struct Count : Http2FrameListener {
    std::size_t data = 0, headers = 0;
    void on_data(Http2DataFrame& f) override { data += f.data.readable_bytes(); }
    void on_headers(Http2HeadersFrame& f) override { headers += f.headers.size(); }
  } count;
  auto round = [&] {
    CompositeByteBuf out;
    writer.write_headers(out, 1, request, false);
    writer.write_data(out, 1, payload.slice(), false);
    writer.write_data(out, 1, payload.slice(), true, 8);
    wire.clear();
    const std::size_t n = out.readable_bytes();
    out.get_bytes(0, wire.writable_span().first(n));
    wire.set_writer_index(n);
    out.clear();
    reader.read(wire, count);
  };
  for (int i = 0; i < 3; ++i) round();
  testing::AllocationScope scope;
  for (int i = 0; i < 200; ++i) round();
  CHECK(scope.count() == 0);
  CHECK(count.data == 203 * 2048);
  CHECK(count.headers == 203 * 7);
}
