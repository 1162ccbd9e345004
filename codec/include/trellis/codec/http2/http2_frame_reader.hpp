// Http2FrameReader: the wire level of an HTTP/2 endpoint's inbound side. Parses frames out of a
// cumulation buffer as bytes arrive (any split), checks every per-frame rule of RFC 9113 §4 and
// §6 (and the connection preface, §3.4), joins and HPACK-decodes header blocks, and hands each
// frame to an Http2FrameListener. Streams, flow control and SETTINGS exchange are the codec's job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include <trellis/codec/http2/hpack_decoder.hpp>
#include <trellis/codec/http2/http2_frames.hpp>
#include <trellis/pipeline/byte_buf.hpp>

namespace trellis::http2 {

/// Receives the frames an Http2FrameReader parses. A frame passed by reference belongs to the
/// reader and is reused for the next one: take what you keep (std::move its ByteBuf, or its
/// Http2Headers at the cost of an allocation for the next list). Every method defaults to
/// ignoring the frame. An exception from a method leaves the reader after that frame.
class Http2FrameListener {
 public:
  virtual ~Http2FrameListener() = default;
  virtual void on_data(Http2DataFrame& frame);                   ///< DATA
  virtual void on_headers(Http2HeadersFrame& frame);             ///< HEADERS (+ CONTINUATION)
  virtual void on_priority(Http2PriorityFrame& frame);           ///< PRIORITY
  virtual void on_reset(Http2ResetFrame& frame);                 ///< RST_STREAM
  virtual void on_settings(Http2SettingsFrame& frame);           ///< SETTINGS
  virtual void on_push_promise(Http2PushPromiseFrame& frame);    ///< PUSH_PROMISE (clients only)
  virtual void on_ping(Http2PingFrame& frame);                   ///< PING
  virtual void on_go_away(Http2GoAwayFrame& frame);              ///< GOAWAY
  virtual void on_window_update(Http2WindowUpdateFrame& frame);  ///< WINDOW_UPDATE
  virtual void on_unknown(Http2UnknownFrame& frame);             ///< a frame of an unknown type
};

/// Which end of the connection reads.
enum class Http2Role { kClient, kServer };

/// Http2FrameReader's settings.
struct Http2FrameReaderOptions {
  /// kServer: the client preface is expected first and PUSH_PROMISE is refused. kClient: a
  /// SETTINGS_ENABLE_PUSH other than 0 is refused.
  Http2Role role = Http2Role::kServer;
  /// Whether the connection's start is checked: the preface (server) and a first frame that is a
  /// SETTINGS without ACK (both sides). Off for a reader that starts mid-connection (h2c upgrade
  /// after the preface was consumed elsewhere, tests).
  bool check_connection_start = true;
  /// The SETTINGS_MAX_FRAME_SIZE this endpoint advertises (16384..16777215).
  std::uint32_t max_frame_size = kHttp2DefaultMaxFrameSize;
  /// The SETTINGS_HEADER_TABLE_SIZE this endpoint advertises (the HPACK decoder's table limit).
  std::uint32_t max_header_table_size = HpackDecoder::kDefaultMaxTableSize;
  /// The SETTINGS_MAX_HEADER_LIST_SIZE this endpoint enforces: a larger list is a stream error
  /// (Http2HeaderListTooLargeError).
  std::uint32_t max_header_list_size = HpackDecoder::kDefaultMaxHeaderListSize;
  /// The most octets of HPACK a header block (HEADERS or PUSH_PROMISE plus CONTINUATION
  /// fragments, padding excluded) may take: beyond it the block cannot be decoded and the
  /// connection ends with ENHANCE_YOUR_CALM. 0: max_header_list_size + 16384.
  std::uint32_t max_header_block_size = 0;
};

/// Parses one direction of an HTTP/2 connection. Not thread-safe: one per connection, on its loop.
///
/// Errors: Http2ConnectionError for what ends the connection (after which read() refuses to go
/// on), Http2StreamError for what ends one stream (the frame is consumed; read() again to go on).
class Http2FrameReader {
 public:
  /// A reader with `options`. Throws InvalidArgumentError when max_frame_size is out of range.
  explicit Http2FrameReader(Http2FrameReaderOptions options = {});

  /// Parses every complete frame in the readable bytes of `in` and passes it to `listener`,
  /// moving `in`'s reader index past it; an incomplete frame stays in `in` for the next call (the
  /// caller appends to `in` as bytes arrive). DATA payloads and the like are slices of `in`.
  void read(ByteBuf& in, Http2FrameListener& listener);

  /// Changes the largest frame accepted, once the peer acknowledged the SETTINGS that advertised
  /// it. Throws InvalidArgumentError outside 16384..16777215.
  void set_max_frame_size(std::uint32_t size);
  /// The largest frame payload accepted.
  std::uint32_t max_frame_size() const noexcept { return max_frame_size_; }
  /// Changes the header list limit.
  void set_max_header_list_size(std::uint32_t size) noexcept;
  /// Changes the header block limit (0: max header list size + 16384).
  void set_max_header_block_size(std::uint32_t size) noexcept;
  /// The header block limit in force.
  std::uint32_t max_header_block_size() const noexcept;
  /// The HPACK decoder (its table limit follows this endpoint's SETTINGS_HEADER_TABLE_SIZE).
  HpackDecoder& hpack_decoder() noexcept { return hpack_; }

  /// True while a header block waits for CONTINUATION frames.
  bool in_header_block() const noexcept { return continuation_stream_ != 0; }

 private:
  void check_preface(ByteBuf& in);
  void read_frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, ByteBuf& payload,
                  Http2FrameListener& listener);
  void read_data(std::uint8_t flags, std::uint32_t stream, ByteBuf& payload,
                 Http2FrameListener& listener);
  void read_headers(std::uint8_t flags, std::uint32_t stream, ByteBuf& payload,
                    Http2FrameListener& listener);
  void read_push_promise(std::uint8_t flags, std::uint32_t stream, ByteBuf& payload,
                         Http2FrameListener& listener);
  void read_continuation(std::uint8_t flags, std::uint32_t stream, ByteBuf& payload,
                         Http2FrameListener& listener);
  void read_settings(std::uint8_t flags, std::uint32_t stream, ByteBuf& payload,
                     Http2FrameListener& listener);
  std::uint32_t read_padding(std::uint8_t flags, ByteBuf& payload, std::size_t fixed);
  void check_block_size(std::uint32_t stream, std::size_t size) const;
  void add_fragment(std::uint32_t stream, std::span<const std::byte> fragment);
  void finish_block(std::span<const std::byte> block, Http2FrameListener& listener);
  void decode_block(std::uint32_t stream, std::span<const std::byte> block, Http2Headers& headers);

  Http2FrameReaderOptions options_;
  std::uint32_t max_frame_size_;
  HpackDecoder hpack_;
  std::size_t preface_matched_ = 0;
  bool expect_settings_ = false;
  bool failed_ = false;
  // The header block being assembled (continuation_stream_ != 0).
  std::uint32_t continuation_stream_ = 0;
  bool push_promise_ = false;
  ByteBuf block_;
  Http2DataFrame data_;
  Http2HeadersFrame headers_;
  Http2PushPromiseFrame push_promise_frame_;
  Http2SettingsFrame settings_;
  Http2GoAwayFrame go_away_;
  Http2UnknownFrame unknown_;
};

}  // namespace trellis::http2
