// Http2FrameCodecOptions: the settings an Http2FrameCodec advertises and the limits it enforces on
// its peer, each with a default that is safe for a public server.
#pragma once

#include <chrono>
#include <cstdint>

#include <trellis/codec/http2/hpack_decoder.hpp>
#include <trellis/codec/http2/hpack_encoder.hpp>
#include <trellis/codec/http2/http2_frame_reader.hpp>
#include <trellis/codec/http2/http2_frames.hpp>

namespace trellis::http2 {

/// Http2FrameCodec's settings and limits.
struct Http2FrameCodecOptions {
  /// kServer: expects the client preface, accepts odd (client) streams, validates requests.
  /// kClient: sends the preface, opens odd streams, refuses server push.
  Http2Role role = Http2Role::kServer;

  /// @name Settings advertised to the peer (the first SETTINGS frame)
  ///@{
  /// SETTINGS_MAX_CONCURRENT_STREAMS: the most streams the peer may have open at once; a stream
  /// beyond it is refused with RST_STREAM REFUSED_STREAM.
  std::uint32_t max_concurrent_streams = 100;
  /// SETTINGS_INITIAL_WINDOW_SIZE: each stream's receive window (applied once the peer
  /// acknowledged the SETTINGS).
  std::uint32_t initial_window_size = 65535;
  /// SETTINGS_MAX_FRAME_SIZE: the largest frame payload accepted (16384..16777215).
  std::uint32_t max_frame_size = kHttp2DefaultMaxFrameSize;
  /// SETTINGS_MAX_HEADER_LIST_SIZE: a larger header list is refused (a stream error).
  std::uint32_t max_header_list_size = HpackDecoder::kDefaultMaxHeaderListSize;
  /// SETTINGS_HEADER_TABLE_SIZE: the HPACK decoder's dynamic table limit.
  std::uint32_t header_table_size = HpackDecoder::kDefaultMaxTableSize;
  ///@}

  /// The connection's receive window; above 65535 the codec sends a WINDOW_UPDATE on stream 0
  /// after its SETTINGS.
  std::uint32_t connection_window_size = 65535;
  /// The most octets of HPACK one header block (HEADERS plus CONTINUATION frames) may take;
  /// beyond it: GOAWAY ENHANCE_YOUR_CALM. 0: max_header_list_size + 16384.
  std::uint32_t max_header_block_size = 0;
  /// True: data read is consumed as soon as it is delivered (WINDOW_UPDATE frames follow by
  /// themselves). False: the application calls Http2FrameCodec::consume_bytes() (or writes an
  /// Http2WindowUpdateFrame) as it processes data, which makes the windows apply back-pressure.
  bool auto_consume = true;
  /// A WINDOW_UPDATE is sent once this fraction (in percent) of a window was consumed.
  std::uint32_t window_update_percent = 50;

  /// @name Flood limits
  ///@{
  /// Streams the peer may reset (RST_STREAM) within rapid_reset_window; more: GOAWAY
  /// ENHANCE_YOUR_CALM (CVE-2023-44487). 0: no limit.
  std::uint32_t max_resets_per_window = 200;
  /// The window of max_resets_per_window, on the loop's clock.
  std::chrono::nanoseconds rapid_reset_window = std::chrono::seconds(30);
  /// Control frames the codec queues by itself (SETTINGS and PING acknowledgements, RST_STREAM,
  /// WINDOW_UPDATE) while the channel is not writable; more: GOAWAY ENHANCE_YOUR_CALM
  /// (CVE-2019-9512, CVE-2019-9515). 0: no limit.
  std::uint32_t max_queued_control_frames = 10000;
  /// Consecutive DATA or HEADERS frames without payload and without END_STREAM; more: GOAWAY
  /// ENHANCE_YOUR_CALM (CVE-2019-9518). 0: no limit.
  std::uint32_t max_consecutive_empty_frames = 2;
  ///@}

  /// How long the peer has to acknowledge this endpoint's SETTINGS (GOAWAY SETTINGS_TIMEOUT
  /// after that). Zero or negative: no deadline.
  std::chrono::nanoseconds settings_ack_timeout = std::chrono::seconds(10);
  /// How long a graceful shutdown waits for open streams to finish before closing anyway.
  std::chrono::nanoseconds graceful_shutdown_timeout = std::chrono::seconds(30);
  /// Whether the server validates request headers (RFC 9113 §8.2, §8.3): a malformed request is
  /// a stream error PROTOCOL_ERROR.
  bool validate_headers = true;
  /// The HPACK encoder's options.
  HpackEncoderOptions hpack = {};
};

}  // namespace trellis::http2
