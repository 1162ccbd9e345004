// The "sum" protocol of the rpc_server and rpc_client examples. Every message is a frame: a
// 4-byte big-endian length, then the body. A request body is a 4-byte id and then the numbers to
// add, 8 bytes each; the reply body is the request's id and the sum (all big-endian).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <trellis/codec.hpp>
#include <trellis/pipeline.hpp>

namespace rpc {

inline constexpr std::size_t kMaxFrameLength = 1 << 20;

struct Request {
  std::uint32_t id = 0;
  std::vector<std::int64_t> numbers;
};

struct Reply {
  std::uint32_t id = 0;
  std::int64_t sum = 0;
};

// Both sides' framing: LengthFieldBasedFrameDecoder cuts the stream at the length fields (and
// strips them); LengthFieldPrepender puts one in front of each ByteBuf written.
inline void add_frame_codec(trellis::Channel& ch) {
  using namespace trellis::codec;
  ch.pipeline()
      .add_last("frame-decoder",
                std::make_shared<LengthFieldBasedFrameDecoder>(kMaxFrameLength, 0, 4, 0, 4))
      .add_last("frame-encoder", std::make_shared<LengthFieldPrepender>(4));
}

inline trellis::ByteBuf encode(const Request& request) {
  auto buf = trellis::ByteBufAllocator::default_allocator().buffer(4 + 8 * request.numbers.size());
  buf.write_u32(request.id);
  for (std::int64_t n : request.numbers) buf.write_i64(n);
  return buf;
}

inline trellis::ByteBuf encode(const Reply& reply) {
  auto buf = trellis::ByteBufAllocator::default_allocator().buffer(12);
  buf.write_u32(reply.id);
  buf.write_i64(reply.sum);
  return buf;
}

// Throws trellis::codec::DecoderError for a body that is not an id and whole numbers.
inline Request decode_request(trellis::ByteBuf& body) {
  if (body.readable_bytes() < 4 || (body.readable_bytes() - 4) % 8 != 0) {
    throw trellis::codec::DecoderError("malformed request");
  }
  Request request{body.read_u32(), {}};
  while (body.is_readable()) request.numbers.push_back(body.read_i64());
  return request;
}

inline Reply decode_reply(trellis::ByteBuf& body) {
  if (body.readable_bytes() != 12) throw trellis::codec::DecoderError("malformed reply");
  const std::uint32_t id = body.read_u32();
  return Reply{id, body.read_i64()};
}

}  // namespace rpc
