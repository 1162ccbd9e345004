#include <trellis/codec/http2/http2_frame_reader.hpp>

#include <algorithm>
#include <cstring>
#include <string>

#include <trellis/pipeline/byte_buf_allocator.hpp>
#include <trellis/pipeline/error.hpp>

namespace trellis::http2 {

void Http2FrameListener::on_data(Http2DataFrame&) {}
void Http2FrameListener::on_headers(Http2HeadersFrame&) {}
void Http2FrameListener::on_priority(Http2PriorityFrame&) {}
void Http2FrameListener::on_reset(Http2ResetFrame&) {}
void Http2FrameListener::on_settings(Http2SettingsFrame&) {}
void Http2FrameListener::on_push_promise(Http2PushPromiseFrame&) {}
void Http2FrameListener::on_ping(Http2PingFrame&) {}
void Http2FrameListener::on_go_away(Http2GoAwayFrame&) {}
void Http2FrameListener::on_window_update(Http2WindowUpdateFrame&) {}
void Http2FrameListener::on_unknown(Http2UnknownFrame&) {}

namespace {

[[noreturn]] void connection_error(Http2Error code, const std::string& text) {
  throw Http2ConnectionError(code, text);
}

void check_frame_size_range(std::uint32_t size) {
  if (size < kHttp2DefaultMaxFrameSize || size > kHttp2MaxFrameSizeUpperBound) {
    throw InvalidArgumentError("HTTP/2 max frame size out of 16384..16777215: " +
                               std::to_string(size));
  }
}

constexpr std::uint32_t kStreamIdMask = 0x7fffffff;
constexpr std::uint32_t kHeaderBlockSlack = 16384;

}  // namespace

Http2FrameReader::Http2FrameReader(Http2FrameReaderOptions options)
    : options_(options),
      max_frame_size_(options.max_frame_size),
      hpack_(options.max_header_table_size, options.max_header_list_size),
      preface_matched_(options.check_connection_start && options.role == Http2Role::kServer
                           ? 0
                           : kHttp2ClientPreface.size()),
      expect_settings_(options.check_connection_start),
      block_(ByteBufAllocator::default_allocator().buffer(1024)) {
  check_frame_size_range(options.max_frame_size);
}

void Http2FrameReader::set_max_frame_size(std::uint32_t size) {
  check_frame_size_range(size);
  max_frame_size_ = size;
}

void Http2FrameReader::set_max_header_list_size(std::uint32_t size) noexcept {
  options_.max_header_list_size = size;
  hpack_.set_max_header_list_size(size);
}

void Http2FrameReader::set_max_header_block_size(std::uint32_t size) noexcept {
  options_.max_header_block_size = size;
}

std::uint32_t Http2FrameReader::max_header_block_size() const noexcept {
  if (options_.max_header_block_size != 0) return options_.max_header_block_size;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(
      std::uint64_t{options_.max_header_list_size} + kHeaderBlockSlack, 0xffffffffu));
}

void Http2FrameReader::read(ByteBuf& in, Http2FrameListener& listener) {
  if (failed_) connection_error(Http2Error::kProtocolError, "the connection already failed");
  try {
    if (preface_matched_ < kHttp2ClientPreface.size()) {
      check_preface(in);
      if (preface_matched_ < kHttp2ClientPreface.size()) return;
    }
    while (in.readable_bytes() >= kHttp2FrameHeaderLength) {
      const std::size_t r = in.reader_index();
      const std::uint32_t length = (std::uint32_t{in.get_u8(r)} << 16) | in.get_u16(r + 1);
      if (length > max_frame_size_) {
        connection_error(Http2Error::kFrameSizeError, "frame of " + std::to_string(length) +
                                                          " octets, more than the maximum " +
                                                          std::to_string(max_frame_size_));
      }
      if (in.readable_bytes() < kHttp2FrameHeaderLength + length) return;
      const std::uint8_t type = in.get_u8(r + 3);
      const std::uint8_t flags = in.get_u8(r + 4);
      const std::uint32_t stream = in.get_u32(r + 5) & kStreamIdMask;
      in.skip_bytes(kHttp2FrameHeaderLength);
      ByteBuf payload = in.read_slice(length);
      read_frame(type, flags, stream, payload, listener);
    }
  } catch (const Http2ConnectionError&) {
    failed_ = true;
    throw;
  }
}

void Http2FrameReader::check_preface(ByteBuf& in) {
  const std::size_t n =
      std::min(in.readable_bytes(), kHttp2ClientPreface.size() - preface_matched_);
  const auto bytes = in.readable_span().first(n);
  if (std::memcmp(bytes.data(), kHttp2ClientPreface.data() + preface_matched_, n) != 0) {
    connection_error(Http2Error::kProtocolError, "bad client connection preface");
  }
  preface_matched_ += n;
  in.skip_bytes(n);
}

void Http2FrameReader::read_frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                                  ByteBuf& payload, Http2FrameListener& listener) {
  if (continuation_stream_ != 0 &&
      (type != static_cast<std::uint8_t>(Http2FrameType::kContinuation) ||
       stream != continuation_stream_)) {
    connection_error(Http2Error::kProtocolError,
                     "a header block on stream " + std::to_string(continuation_stream_) +
                         " must go on with CONTINUATION frames on that stream only");
  }
  if (expect_settings_) {
    if (type != static_cast<std::uint8_t>(Http2FrameType::kSettings) ||
        (flags & http2_flags::kAck) != 0) {
      connection_error(Http2Error::kProtocolError,
                       "the first frame must be SETTINGS (without ACK)");
    }
    expect_settings_ = false;
  }
  const std::size_t length = payload.readable_bytes();
  switch (static_cast<Http2FrameType>(type)) {
    case Http2FrameType::kData:
      read_data(flags, stream, payload, listener);
      return;
    case Http2FrameType::kHeaders:
      read_headers(flags, stream, payload, listener);
      return;
    case Http2FrameType::kPriority: {
      if (stream == 0) connection_error(Http2Error::kProtocolError, "PRIORITY on stream 0");
      if (length != 5) {
        throw Http2StreamError(stream, Http2Error::kFrameSizeError,
                               "PRIORITY of " + std::to_string(length) + " octets, not 5");
      }
      Http2PriorityFrame frame;
      frame.stream_id = stream;
      const std::uint32_t e = payload.read_u32();
      frame.priority = {e & kStreamIdMask, static_cast<std::uint16_t>(payload.read_u8() + 1),
                        (e >> 31) != 0};
      if (frame.priority.stream_dependency == stream) {
        throw Http2StreamError(stream, Http2Error::kProtocolError,
                               "stream " + std::to_string(stream) + " depends on itself");
      }
      listener.on_priority(frame);
      return;
    }
    case Http2FrameType::kRstStream: {
      if (stream == 0) connection_error(Http2Error::kProtocolError, "RST_STREAM on stream 0");
      if (length != 4) {
        connection_error(Http2Error::kFrameSizeError,
                         "RST_STREAM of " + std::to_string(length) + " octets, not 4");
      }
      Http2ResetFrame frame{stream, static_cast<Http2Error>(payload.read_u32())};
      listener.on_reset(frame);
      return;
    }
    case Http2FrameType::kSettings:
      read_settings(flags, stream, payload, listener);
      return;
    case Http2FrameType::kPushPromise:
      read_push_promise(flags, stream, payload, listener);
      return;
    case Http2FrameType::kPing: {
      if (stream != 0) connection_error(Http2Error::kProtocolError, "PING on a stream");
      if (length != 8) {
        connection_error(Http2Error::kFrameSizeError,
                         "PING of " + std::to_string(length) + " octets, not 8");
      }
      Http2PingFrame frame{payload.read_u64(), (flags & http2_flags::kAck) != 0};
      listener.on_ping(frame);
      return;
    }
    case Http2FrameType::kGoAway: {
      if (stream != 0) connection_error(Http2Error::kProtocolError, "GOAWAY on a stream");
      if (length < 8) {
        connection_error(Http2Error::kFrameSizeError,
                         "GOAWAY of " + std::to_string(length) + " octets, less than 8");
      }
      go_away_.last_stream_id = payload.read_u32() & kStreamIdMask;
      go_away_.error_code = static_cast<Http2Error>(payload.read_u32());
      go_away_.debug_data = std::move(payload);
      listener.on_go_away(go_away_);
      go_away_.debug_data = ByteBuf();
      return;
    }
    case Http2FrameType::kWindowUpdate: {
      if (length != 4) {
        connection_error(Http2Error::kFrameSizeError,
                         "WINDOW_UPDATE of " + std::to_string(length) + " octets, not 4");
      }
      Http2WindowUpdateFrame frame{stream, payload.read_u32() & kStreamIdMask};
      if (frame.increment == 0) {
        if (stream == 0) {
          connection_error(Http2Error::kProtocolError, "WINDOW_UPDATE with increment 0");
        }
        throw Http2StreamError(stream, Http2Error::kProtocolError,
                               "WINDOW_UPDATE with increment 0");
      }
      listener.on_window_update(frame);
      return;
    }
    case Http2FrameType::kContinuation:
      read_continuation(flags, stream, payload, listener);
      return;
  }
  unknown_.type = type;
  unknown_.flags = flags;
  unknown_.stream_id = stream;
  unknown_.payload = std::move(payload);
  listener.on_unknown(unknown_);
  unknown_.payload = ByteBuf();
}

std::uint32_t Http2FrameReader::read_padding(std::uint8_t flags, ByteBuf& payload,
                                             std::size_t fixed) {
  std::uint32_t padding = 0;
  if ((flags & http2_flags::kPadded) != 0) {
    if (payload.readable_bytes() < 1 + fixed) {
      connection_error(Http2Error::kFrameSizeError, "padded frame too short for its fields");
    }
    const std::uint8_t pad_length = payload.read_u8();
    if (pad_length > payload.readable_bytes() - fixed) {
      connection_error(Http2Error::kProtocolError, "padding of " + std::to_string(pad_length) +
                                                       " octets, not less than the payload");
    }
    payload.set_writer_index(payload.writer_index() - pad_length);
    padding = 1u + pad_length;
  } else if (payload.readable_bytes() < fixed) {
    connection_error(Http2Error::kFrameSizeError, "frame too short for its fields");
  }
  return padding;
}

void Http2FrameReader::read_data(std::uint8_t flags, std::uint32_t stream, ByteBuf& payload,
                                 Http2FrameListener& listener) {
  if (stream == 0) connection_error(Http2Error::kProtocolError, "DATA on stream 0");
  data_.padding = read_padding(flags, payload, 0);
  data_.stream_id = stream;
  data_.end_stream = (flags & http2_flags::kEndStream) != 0;
  data_.data = std::move(payload);
  listener.on_data(data_);
  data_.data = ByteBuf();
}

void Http2FrameReader::read_headers(std::uint8_t flags, std::uint32_t stream, ByteBuf& payload,
                                    Http2FrameListener& listener) {
  if (stream == 0) connection_error(Http2Error::kProtocolError, "HEADERS on stream 0");
  const bool has_priority = (flags & http2_flags::kPriority) != 0;
  headers_.padding = read_padding(flags, payload, has_priority ? 5 : 0);
  headers_.stream_id = stream;
  headers_.end_stream = (flags & http2_flags::kEndStream) != 0;
  if (has_priority) {
    const std::uint32_t e = payload.read_u32();
    headers_.priority = Http2Priority{
        e & kStreamIdMask, static_cast<std::uint16_t>(payload.read_u8() + 1), (e >> 31) != 0};
  } else {
    headers_.priority.reset();
  }
  push_promise_ = false;
  if ((flags & http2_flags::kEndHeaders) != 0) {
    check_block_size(stream, payload.readable_bytes());
    finish_block(payload.readable_span(), listener);
  } else {
    block_.clear();
    continuation_stream_ = stream;
    add_fragment(stream, payload.readable_span());
  }
}

void Http2FrameReader::read_push_promise(std::uint8_t flags, std::uint32_t stream, ByteBuf& payload,
                                         Http2FrameListener& listener) {
  if (options_.role == Http2Role::kServer) {
    connection_error(Http2Error::kProtocolError, "PUSH_PROMISE sent to a server");
  }
  if (stream == 0) connection_error(Http2Error::kProtocolError, "PUSH_PROMISE on stream 0");
  push_promise_frame_.padding = read_padding(flags, payload, 4);
  push_promise_frame_.stream_id = stream;
  push_promise_frame_.promised_stream_id = payload.read_u32() & kStreamIdMask;
  if (push_promise_frame_.promised_stream_id == 0) {
    connection_error(Http2Error::kProtocolError, "PUSH_PROMISE of stream 0");
  }
  push_promise_ = true;
  if ((flags & http2_flags::kEndHeaders) != 0) {
    check_block_size(stream, payload.readable_bytes());
    finish_block(payload.readable_span(), listener);
  } else {
    block_.clear();
    continuation_stream_ = stream;
    add_fragment(stream, payload.readable_span());
  }
}

void Http2FrameReader::read_continuation(std::uint8_t flags, std::uint32_t stream, ByteBuf& payload,
                                         Http2FrameListener& listener) {
  // A CONTINUATION that belongs to the open block got here; any other is out of place.
  if (continuation_stream_ == 0) {
    connection_error(Http2Error::kProtocolError,
                     stream == 0 ? "CONTINUATION on stream 0"
                                 : "CONTINUATION without HEADERS or PUSH_PROMISE before it");
  }
  add_fragment(stream, payload.readable_span());
  if ((flags & http2_flags::kEndHeaders) != 0) finish_block(block_.readable_span(), listener);
}

void Http2FrameReader::check_block_size(std::uint32_t stream, std::size_t size) const {
  if (size > max_header_block_size()) {
    connection_error(Http2Error::kEnhanceYourCalm,
                     "header block on stream " + std::to_string(stream) + " larger than " +
                         std::to_string(max_header_block_size()) + " octets");
  }
}

void Http2FrameReader::add_fragment(std::uint32_t stream, std::span<const std::byte> fragment) {
  check_block_size(stream, block_.readable_bytes() + fragment.size());
  block_.write_bytes(fragment);
}

void Http2FrameReader::finish_block(std::span<const std::byte> block,
                                    Http2FrameListener& listener) {
  continuation_stream_ = 0;
  if (push_promise_) {
    decode_block(push_promise_frame_.stream_id, block, push_promise_frame_.headers);
    listener.on_push_promise(push_promise_frame_);
    return;
  }
  decode_block(headers_.stream_id, block, headers_.headers);
  if (headers_.priority && headers_.priority->stream_dependency == headers_.stream_id) {
    throw Http2StreamError(headers_.stream_id, Http2Error::kProtocolError,
                           "stream " + std::to_string(headers_.stream_id) + " depends on itself");
  }
  listener.on_headers(headers_);
}

void Http2FrameReader::decode_block(std::uint32_t stream, std::span<const std::byte> block,
                                    Http2Headers& headers) {
  headers.clear();
  bool regular_seen = false;
  bool misplaced_pseudo = false;
  try {
    hpack_.decode(block, [&](std::string_view name, std::string_view value, bool sensitive) {
      if (!name.empty() && name.front() == ':') {
        misplaced_pseudo |= regular_seen;
      } else {
        regular_seen = true;
      }
      headers.add(name, value, sensitive);
    });
  } catch (const HpackHeaderListTooLargeError& e) {
    throw Http2HeaderListTooLargeError(stream, Http2Error::kProtocolError, e.what());
  } catch (const HpackDecodingError& e) {
    connection_error(Http2Error::kCompressionError, e.what());
  }
  if (misplaced_pseudo) {
    throw Http2StreamError(stream, Http2Error::kProtocolError,
                           "a pseudo-header after a regular field (RFC 9113 §8.3)");
  }
}

void Http2FrameReader::read_settings(std::uint8_t flags, std::uint32_t stream, ByteBuf& payload,
                                     Http2FrameListener& listener) {
  if (stream != 0) connection_error(Http2Error::kProtocolError, "SETTINGS on a stream");
  const std::size_t length = payload.readable_bytes();
  settings_.ack = (flags & http2_flags::kAck) != 0;
  settings_.settings.clear();
  if (settings_.ack && length != 0) {
    connection_error(Http2Error::kFrameSizeError, "SETTINGS ACK with a payload");
  }
  if (length % 6 != 0) {
    connection_error(Http2Error::kFrameSizeError,
                     "SETTINGS of " + std::to_string(length) + " octets, not a multiple of 6");
  }
  while (payload.is_readable()) {
    const std::uint16_t id = payload.read_u16();
    const std::uint32_t value = payload.read_u32();
    switch (static_cast<Http2SettingId>(id)) {
      case Http2SettingId::kEnablePush:
        if (value > 1) {
          connection_error(Http2Error::kProtocolError,
                           "SETTINGS_ENABLE_PUSH of " + std::to_string(value));
        }
        if (value != 0 && options_.role == Http2Role::kClient) {
          connection_error(Http2Error::kProtocolError, "a server sent SETTINGS_ENABLE_PUSH 1");
        }
        break;
      case Http2SettingId::kInitialWindowSize:
        if (value > kHttp2MaxWindowSize) {
          connection_error(Http2Error::kFlowControlError,
                           "SETTINGS_INITIAL_WINDOW_SIZE of " + std::to_string(value));
        }
        break;
      case Http2SettingId::kMaxFrameSize:
        if (value < kHttp2DefaultMaxFrameSize || value > kHttp2MaxFrameSizeUpperBound) {
          connection_error(Http2Error::kProtocolError,
                           "SETTINGS_MAX_FRAME_SIZE of " + std::to_string(value));
        }
        break;
      default:
        break;
    }
    settings_.settings.push_back({id, value});
  }
  listener.on_settings(settings_);
}

}  // namespace trellis::http2
