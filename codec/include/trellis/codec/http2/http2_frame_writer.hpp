// Http2FrameWriter: the wire level of an HTTP/2 endpoint's outbound side. Serialises each frame
// type (RFC 9113 §6) into a CompositeByteBuf: frame headers and control frames in a reused arena,
// DATA payloads appended as they are (no copy), header lists HPACK-encoded and split into HEADERS
// (or PUSH_PROMISE) + CONTINUATION frames at the peer's SETTINGS_MAX_FRAME_SIZE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include <trellis/codec/http2/hpack_encoder.hpp>
#include <trellis/codec/http2/http2_frames.hpp>
#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/composite_byte_buf.hpp>

namespace trellis::http2 {

/// Writes the frames of one direction of an HTTP/2 connection. Not thread-safe: one per
/// connection, on its loop. The writer does not check stream states or flow control (the codec
/// does); it throws InvalidArgumentError for what cannot be put on the wire (a stream id above
/// 2^31-1, a DATA payload above the max frame size, padding above 256 octets, a zero increment).
///
/// Frame headers and small frames are written in an arena buffer and appended to `out` as slices;
/// the arena is reused once the slices are gone (written out), so a steady stream of frames
/// allocates nothing.
class Http2FrameWriter {
 public:
  /// A writer whose HPACK encoder has `hpack` options; buffers come from `allocator`.
  explicit Http2FrameWriter(HpackEncoderOptions hpack = {},
                            ByteBufAllocator& allocator = ByteBufAllocator::default_allocator());

  /// Sets the largest frame payload to send (the peer's SETTINGS_MAX_FRAME_SIZE). Throws
  /// InvalidArgumentError outside 16384..16777215.
  void set_max_frame_size(std::uint32_t size);
  /// The largest frame payload sent.
  std::uint32_t max_frame_size() const noexcept { return max_frame_size_; }
  /// The HPACK encoder (set_peer_max_table_size() on the peer's SETTINGS_HEADER_TABLE_SIZE).
  HpackEncoder& hpack_encoder() noexcept { return hpack_; }

  /// The client connection preface (a client sends it, then its SETTINGS).
  void write_preface(CompositeByteBuf& out);
  /// DATA: `data` is appended as it is. `padding` counts the Pad Length octet (0: not padded,
  /// else 1..256).
  void write_data(CompositeByteBuf& out, std::uint32_t stream_id, ByteBuf data, bool end_stream,
                  std::uint32_t padding = 0);
  /// HEADERS, followed by CONTINUATION frames when the encoded block does not fit one frame.
  void write_headers(CompositeByteBuf& out, std::uint32_t stream_id, const Http2Headers& headers,
                     bool end_stream, std::optional<Http2Priority> priority = std::nullopt,
                     std::uint32_t padding = 0);
  /// PUSH_PROMISE, followed by CONTINUATION frames as needed.
  void write_push_promise(CompositeByteBuf& out, std::uint32_t stream_id,
                          std::uint32_t promised_stream_id, const Http2Headers& headers,
                          std::uint32_t padding = 0);
  /// PRIORITY.
  void write_priority(CompositeByteBuf& out, std::uint32_t stream_id, Http2Priority priority);
  /// RST_STREAM.
  void write_rst_stream(CompositeByteBuf& out, std::uint32_t stream_id, Http2Error error_code);
  /// SETTINGS with `settings`, in order.
  void write_settings(CompositeByteBuf& out, std::span<const Http2Setting> settings);
  /// SETTINGS with ACK.
  void write_settings_ack(CompositeByteBuf& out);
  /// PING (ack: the answer to one).
  void write_ping(CompositeByteBuf& out, bool ack, std::uint64_t opaque_data);
  /// GOAWAY with `debug_data` (copied).
  void write_go_away(CompositeByteBuf& out, std::uint32_t last_stream_id, Http2Error error_code,
                     std::span<const std::byte> debug_data = {});
  /// WINDOW_UPDATE (stream 0: the connection's window).
  void write_window_update(CompositeByteBuf& out, std::uint32_t stream_id, std::uint32_t increment);
  /// Any frame, `payload` copied (an extension frame, or a test's malformed one).
  void write_frame(CompositeByteBuf& out, std::uint8_t type, std::uint8_t flags,
                   std::uint32_t stream_id, std::span<const std::byte> payload);

 private:
  ByteBuf& arena(std::size_t length);
  void write_header(std::size_t length, std::uint8_t type, std::uint8_t flags,
                    std::uint32_t stream_id);
  void emit(CompositeByteBuf& out);
  void write_block(CompositeByteBuf& out, std::uint8_t type, std::uint8_t flags,
                   std::uint32_t stream_id, std::span<const std::byte> prefix,
                   const Http2Headers& headers, std::uint32_t padding);

  ByteBufAllocator* allocator_;
  HpackEncoder hpack_;
  std::uint32_t max_frame_size_ = kHttp2DefaultMaxFrameSize;
  ByteBuf arena_;
  std::size_t arena_start_ = 0;  // where the bytes not yet emitted begin
  ByteBuf block_;                // the header block being split
};

}  // namespace trellis::http2
