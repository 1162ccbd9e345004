#include <trellis/codec/http2/http2_frame_writer.hpp>

#include <algorithm>
#include <array>
#include <string>

#include <trellis/pipeline/error.hpp>

namespace trellis::http2 {

namespace {

constexpr std::size_t kArenaSize = 32768;
constexpr std::uint32_t kMaxStreamId = 0x7fffffff;
constexpr std::array<std::byte, 256> kZeros{};

void check_stream(std::uint32_t stream_id) {
  if (stream_id > kMaxStreamId) {
    throw InvalidArgumentError("HTTP/2 stream id above 2^31-1: " + std::to_string(stream_id));
  }
}

void check_padding(std::uint32_t padding) {
  if (padding > 256) {
    throw InvalidArgumentError("HTTP/2 padding above 256 octets: " + std::to_string(padding));
  }
}

std::uint8_t pad_flag(std::uint32_t padding) { return padding != 0 ? http2_flags::kPadded : 0; }

}  // namespace

Http2FrameWriter::Http2FrameWriter(HpackEncoderOptions hpack, ByteBufAllocator& allocator)
    : allocator_(&allocator), hpack_(hpack), block_(allocator.buffer(1024)) {}

void Http2FrameWriter::set_max_frame_size(std::uint32_t size) {
  if (size < kHttp2DefaultMaxFrameSize || size > kHttp2MaxFrameSizeUpperBound) {
    throw InvalidArgumentError("HTTP/2 max frame size out of 16384..16777215: " +
                               std::to_string(size));
  }
  max_frame_size_ = size;
}

ByteBuf& Http2FrameWriter::arena(std::size_t length) {
  // Every byte written so far was emitted; when no slice of them is left, start over.
  if (arena_.capacity() != 0 && arena_.ref_count() == 1) {
    arena_.clear();
    arena_start_ = 0;
  }
  if (arena_.writable_bytes() < length) {
    arena_ = allocator_->buffer(std::max(length, kArenaSize));
    arena_start_ = 0;
  }
  return arena_;
}

void Http2FrameWriter::write_header(std::size_t length, std::uint8_t type, std::uint8_t flags,
                                    std::uint32_t stream_id) {
  arena_.write_u8(static_cast<std::uint8_t>(length >> 16));
  arena_.write_u16(static_cast<std::uint16_t>(length));
  arena_.write_u8(type);
  arena_.write_u8(flags);
  arena_.write_u32(stream_id);
}

void Http2FrameWriter::emit(CompositeByteBuf& out) {
  out.add_component(arena_.slice(arena_start_, arena_.writer_index() - arena_start_));
  arena_start_ = arena_.writer_index();
}

void Http2FrameWriter::write_preface(CompositeByteBuf& out) {
  arena(kHttp2ClientPreface.size()).write_string(kHttp2ClientPreface);
  emit(out);
}

void Http2FrameWriter::write_data(CompositeByteBuf& out, std::uint32_t stream_id, ByteBuf data,
                                  bool end_stream, std::uint32_t padding) {
  check_stream(stream_id);
  check_padding(padding);
  const std::size_t length = data.readable_bytes() + padding;
  if (length > max_frame_size_) {
    throw InvalidArgumentError("DATA of " + std::to_string(length) +
                               " octets, more than the max frame size " +
                               std::to_string(max_frame_size_));
  }
  ByteBuf& a = arena(kHttp2FrameHeaderLength + 1 + 255);
  write_header(
      length, static_cast<std::uint8_t>(Http2FrameType::kData),
      static_cast<std::uint8_t>((end_stream ? http2_flags::kEndStream : 0) | pad_flag(padding)),
      stream_id);
  if (padding != 0) a.write_u8(static_cast<std::uint8_t>(padding - 1));
  emit(out);
  out.add_component(std::move(data));
  if (padding > 1) {
    arena_.write_bytes(std::span(kZeros).first(padding - 1));
    emit(out);
  }
}

void Http2FrameWriter::write_block(CompositeByteBuf& out, std::uint8_t type, std::uint8_t flags,
                                   std::uint32_t stream_id, std::span<const std::byte> prefix,
                                   const Http2Headers& headers, std::uint32_t padding) {
  check_stream(stream_id);
  check_padding(padding);
  block_.clear();
  hpack_.begin_block(block_);
  for (std::size_t i = 0; i < headers.size(); ++i) {
    const auto f = headers[i];
    hpack_.encode_field(f.name, f.value, f.sensitive, block_);
  }
  auto rest = block_.readable_span();
  const std::size_t first = std::min(rest.size(), max_frame_size_ - prefix.size() - padding);
  const bool end_headers = first == rest.size();
  {
    const std::size_t length = padding + prefix.size() + first;
    ByteBuf& a = arena(kHttp2FrameHeaderLength + length);
    write_header(length, type,
                 static_cast<std::uint8_t>(flags | pad_flag(padding) |
                                           (end_headers ? http2_flags::kEndHeaders : 0)),
                 stream_id);
    if (padding != 0) a.write_u8(static_cast<std::uint8_t>(padding - 1));
    a.write_bytes(prefix);
    a.write_bytes(rest.first(first));
    if (padding > 1) a.write_bytes(std::span(kZeros).first(padding - 1));
    emit(out);
  }
  rest = rest.subspan(first);
  while (!rest.empty()) {
    const std::size_t n = std::min<std::size_t>(rest.size(), max_frame_size_);
    ByteBuf& a = arena(kHttp2FrameHeaderLength + n);
    write_header(n, static_cast<std::uint8_t>(Http2FrameType::kContinuation),
                 n == rest.size() ? http2_flags::kEndHeaders : 0, stream_id);
    a.write_bytes(rest.first(n));
    emit(out);
    rest = rest.subspan(n);
  }
}

void Http2FrameWriter::write_headers(CompositeByteBuf& out, std::uint32_t stream_id,
                                     const Http2Headers& headers, bool end_stream,
                                     std::optional<Http2Priority> priority, std::uint32_t padding) {
  std::array<std::byte, 5> prefix{};
  std::size_t prefix_length = 0;
  std::uint8_t flags = end_stream ? http2_flags::kEndStream : 0;
  if (priority) {
    if (priority->weight < 1 || priority->weight > 256 ||
        priority->stream_dependency > kMaxStreamId) {
      throw InvalidArgumentError("HTTP/2 priority out of range");
    }
    const std::uint32_t e = priority->stream_dependency | (priority->exclusive ? 0x80000000u : 0u);
    prefix = {std::byte(e >> 24), std::byte(e >> 16), std::byte(e >> 8), std::byte(e),
              std::byte(priority->weight - 1)};
    prefix_length = 5;
    flags |= http2_flags::kPriority;
  }
  write_block(out, static_cast<std::uint8_t>(Http2FrameType::kHeaders), flags, stream_id,
              std::span(prefix).first(prefix_length), headers, padding);
}

void Http2FrameWriter::write_push_promise(CompositeByteBuf& out, std::uint32_t stream_id,
                                          std::uint32_t promised_stream_id,
                                          const Http2Headers& headers, std::uint32_t padding) {
  check_stream(promised_stream_id);
  const std::array<std::byte, 4> prefix = {
      std::byte(promised_stream_id >> 24), std::byte(promised_stream_id >> 16),
      std::byte(promised_stream_id >> 8), std::byte(promised_stream_id)};
  write_block(out, static_cast<std::uint8_t>(Http2FrameType::kPushPromise), 0, stream_id, prefix,
              headers, padding);
}

void Http2FrameWriter::write_priority(CompositeByteBuf& out, std::uint32_t stream_id,
                                      Http2Priority priority) {
  check_stream(stream_id);
  if (priority.weight < 1 || priority.weight > 256 || priority.stream_dependency > kMaxStreamId) {
    throw InvalidArgumentError("HTTP/2 priority out of range");
  }
  ByteBuf& a = arena(kHttp2FrameHeaderLength + 5);
  write_header(5, static_cast<std::uint8_t>(Http2FrameType::kPriority), 0, stream_id);
  a.write_u32(priority.stream_dependency | (priority.exclusive ? 0x80000000u : 0u));
  a.write_u8(static_cast<std::uint8_t>(priority.weight - 1));
  emit(out);
}

void Http2FrameWriter::write_rst_stream(CompositeByteBuf& out, std::uint32_t stream_id,
                                        Http2Error error_code) {
  check_stream(stream_id);
  ByteBuf& a = arena(kHttp2FrameHeaderLength + 4);
  write_header(4, static_cast<std::uint8_t>(Http2FrameType::kRstStream), 0, stream_id);
  a.write_u32(static_cast<std::uint32_t>(error_code));
  emit(out);
}

void Http2FrameWriter::write_settings(CompositeByteBuf& out,
                                      std::span<const Http2Setting> settings) {
  const std::size_t length = 6 * settings.size();
  if (length > max_frame_size_) throw InvalidArgumentError("too many HTTP/2 settings for a frame");
  ByteBuf& a = arena(kHttp2FrameHeaderLength + length);
  write_header(length, static_cast<std::uint8_t>(Http2FrameType::kSettings), 0, 0);
  for (const Http2Setting& s : settings) {
    a.write_u16(s.id);
    a.write_u32(s.value);
  }
  emit(out);
}

void Http2FrameWriter::write_settings_ack(CompositeByteBuf& out) {
  arena(kHttp2FrameHeaderLength);
  write_header(0, static_cast<std::uint8_t>(Http2FrameType::kSettings), http2_flags::kAck, 0);
  emit(out);
}

void Http2FrameWriter::write_ping(CompositeByteBuf& out, bool ack, std::uint64_t opaque_data) {
  ByteBuf& a = arena(kHttp2FrameHeaderLength + 8);
  write_header(8, static_cast<std::uint8_t>(Http2FrameType::kPing), ack ? http2_flags::kAck : 0, 0);
  a.write_u64(opaque_data);
  emit(out);
}

void Http2FrameWriter::write_go_away(CompositeByteBuf& out, std::uint32_t last_stream_id,
                                     Http2Error error_code, std::span<const std::byte> debug_data) {
  check_stream(last_stream_id);
  const std::size_t length = 8 + debug_data.size();
  if (length > max_frame_size_) throw InvalidArgumentError("GOAWAY debug data too long");
  ByteBuf& a = arena(kHttp2FrameHeaderLength + length);
  write_header(length, static_cast<std::uint8_t>(Http2FrameType::kGoAway), 0, 0);
  a.write_u32(last_stream_id);
  a.write_u32(static_cast<std::uint32_t>(error_code));
  a.write_bytes(debug_data);
  emit(out);
}

void Http2FrameWriter::write_window_update(CompositeByteBuf& out, std::uint32_t stream_id,
                                           std::uint32_t increment) {
  check_stream(stream_id);
  if (increment == 0 || increment > kHttp2MaxWindowSize) {
    throw InvalidArgumentError("WINDOW_UPDATE increment out of 1..2^31-1: " +
                               std::to_string(increment));
  }
  ByteBuf& a = arena(kHttp2FrameHeaderLength + 4);
  write_header(4, static_cast<std::uint8_t>(Http2FrameType::kWindowUpdate), 0, stream_id);
  a.write_u32(increment);
  emit(out);
}

void Http2FrameWriter::write_frame(CompositeByteBuf& out, std::uint8_t type, std::uint8_t flags,
                                   std::uint32_t stream_id, std::span<const std::byte> payload) {
  if (payload.size() > kHttp2MaxFrameSizeUpperBound) {
    throw InvalidArgumentError("HTTP/2 frame payload above 2^24-1 octets");
  }
  ByteBuf& a = arena(kHttp2FrameHeaderLength + payload.size());
  write_header(payload.size(), type, flags, stream_id);
  a.write_bytes(payload);
  emit(out);
}

}  // namespace trellis::http2
