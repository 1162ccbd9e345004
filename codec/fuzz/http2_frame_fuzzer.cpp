// libFuzzer target: arbitrary bytes as the inbound side of an HTTP/2 connection, read by
// Http2FrameReader in input-chosen chunks, as a server (preface first) or a client, with
// input-chosen frame size and header limits. Only frames or the two HTTP/2 errors may come out;
// every frame must respect the limits; after a stream error the reader must go on; and the frames
// read (stream errors aside), written again by Http2FrameWriter, must read back as the same frames.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <trellis/codec/http2/http2_frame_reader.hpp>
#include <trellis/codec/http2/http2_frame_writer.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>

using namespace trellis;
using namespace trellis::http2;

namespace {

// Checks each frame against the reader's limits, keeps a text trace and re-writes it.
struct Checker : Http2FrameListener {
  Http2FrameReader* reader = nullptr;
  // kAll: only the fields read as sensitive go out as never indexed, as they came.
  Http2FrameWriter writer{{.indexing = HpackIndexing::kAll}};
  CompositeByteBuf rewritten;
  std::vector<std::string> trace;
  bool rewrite = true;

  void check_size(std::size_t n) const {
    if (n > reader->max_frame_size()) __builtin_trap();
  }
  static std::string text(const Http2Headers& h) {
    std::string s;
    for (std::size_t i = 0; i < h.size(); ++i) {
      s.append(h[i].name).append(":").append(h[i].value).append(h[i].sensitive ? "!\n" : "\n");
    }
    return s;
  }
  void on_data(Http2DataFrame& f) override {
    check_size(f.flow_controlled_length());
    if (f.stream_id == 0 || f.padding > 256) __builtin_trap();
    trace.push_back("D" + std::to_string(f.stream_id) + f.data.to_string());
    if (rewrite)
      writer.write_data(rewritten, f.stream_id, std::move(f.data), f.end_stream, f.padding);
  }
  void on_headers(Http2HeadersFrame& f) override {
    if (f.stream_id == 0) __builtin_trap();
    if (f.headers.header_list_size() > reader->hpack_decoder().max_header_list_size()) {
      __builtin_trap();
    }
    trace.push_back("H" + std::to_string(f.stream_id) + std::to_string(f.end_stream) +
                    text(f.headers));
    if (rewrite) writer.write_headers(rewritten, f.stream_id, f.headers, f.end_stream, f.priority);
  }
  void on_push_promise(Http2PushPromiseFrame& f) override {
    if (f.stream_id == 0 || f.promised_stream_id == 0) __builtin_trap();
    trace.push_back("P" + std::to_string(f.promised_stream_id) + text(f.headers));
    if (rewrite) writer.write_push_promise(rewritten, f.stream_id, f.promised_stream_id, f.headers);
  }
  void on_settings(Http2SettingsFrame& f) override {
    std::string s = f.ack ? "SA" : "S";
    for (const auto& x : f.settings)
      s += std::to_string(x.id) + "=" + std::to_string(x.value) + ",";
    trace.push_back(s);
    if (!rewrite) return;
    if (f.ack) {
      writer.write_settings_ack(rewritten);
    } else {
      writer.write_settings(rewritten, f.settings);
    }
  }
  void on_ping(Http2PingFrame& f) override {
    trace.push_back("G" + std::to_string(f.opaque_data));
    if (rewrite) writer.write_ping(rewritten, f.ack, f.opaque_data);
  }
  void on_window_update(Http2WindowUpdateFrame& f) override {
    if (f.increment == 0 || f.increment > 0x7fffffff) __builtin_trap();
    trace.push_back("W" + std::to_string(f.stream_id) + "+" + std::to_string(f.increment));
    if (rewrite) writer.write_window_update(rewritten, f.stream_id, f.increment);
  }
  void on_reset(Http2ResetFrame& f) override {
    trace.push_back("R" + std::to_string(f.stream_id));
    if (rewrite) writer.write_rst_stream(rewritten, f.stream_id, f.error_code);
  }
  void on_go_away(Http2GoAwayFrame& f) override {
    trace.push_back("A" + std::to_string(f.last_stream_id) + f.debug_data.to_string());
    if (rewrite) {
      writer.write_go_away(rewritten, f.last_stream_id, f.error_code, f.debug_data.readable_span());
    }
  }
  void on_priority(Http2PriorityFrame& f) override {
    trace.push_back("Y" + std::to_string(f.stream_id));
    if (rewrite) writer.write_priority(rewritten, f.stream_id, f.priority);
  }
  void on_unknown(Http2UnknownFrame& f) override {
    trace.push_back("U" + std::to_string(f.type) + f.payload.to_string());
    if (rewrite) {
      writer.write_frame(rewritten, f.type, f.flags, f.stream_id, f.payload.readable_span());
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::uint32_t list_sizes[] = {64, 1024, 16384, 65536};
  Http2FrameReaderOptions options;
  options.role = (data[0] & 1) != 0 ? Http2Role::kClient : Http2Role::kServer;
  options.check_connection_start = (data[0] & 2) != 0;
  options.max_header_list_size = list_sizes[(data[0] >> 2) & 3];
  options.max_header_block_size = (data[0] & 0x10) != 0 ? 256 : 0;
  if ((data[0] & 0x20) != 0) options.max_frame_size = 65536;
  const std::size_t step = 1 + data[1];
  const auto input = std::span<const std::uint8_t>(data + 2, size - 2);

  Http2FrameReader reader(options);
  Checker checker;
  checker.reader = &reader;
  checker.writer.set_max_frame_size(options.max_frame_size);
  ByteBuf cumulation = ByteBufAllocator::default_allocator().buffer(256);
  for (std::size_t i = 0; i < input.size(); i += step) {
    cumulation.write_bytes(std::as_bytes(input.subspan(i, std::min(step, input.size() - i))));
    for (;;) {
      try {
        reader.read(cumulation, checker);
        break;
      } catch (const Http2StreamError& e) {
        if (e.stream() == 0) __builtin_trap();
        continue;  // the frame was consumed: read on
      } catch (const Http2ConnectionError&) {
        // The reader refuses more input from here on.
        try {
          reader.read(cumulation, checker);
        } catch (const Http2ConnectionError&) {
          goto done;
        }
        __builtin_trap();
      }
    }
    cumulation.discard_read_bytes();
  }
done:
  // Frames that raised a stream error are in neither the trace nor the rewritten stream (the
  // writer's HPACK state only depends on what it wrote).
  if (checker.trace.empty()) return 0;
  Http2FrameReaderOptions again = options;
  again.check_connection_start = false;
  again.max_header_list_size = 1u << 30;
  again.max_header_block_size = 1u << 30;
  Http2FrameReader reader2(again);
  Checker checker2;
  checker2.reader = &reader2;
  checker2.rewrite = false;
  ByteBuf wire = checker.rewritten.consolidate();
  reader2.read(wire, checker2);
  if (wire.is_readable() || checker2.trace != checker.trace) __builtin_trap();
  return 0;
}
