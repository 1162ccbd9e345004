// StringDecoder and StringEncoder (see string_codec.hpp).
#include <trellis/codec/string_codec.hpp>

#include <string_view>

#include <trellis/pipeline/byte_buf_allocator.hpp>

namespace trellis::codec {

void StringDecoder::decode(ChannelHandlerContext&, ByteBuf msg, std::vector<Message>& out) {
  out.emplace_back(msg.to_string());
}

void StringEncoder::write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  std::string_view text;
  if (const auto* s = msg.try_get<std::string>()) {
    text = *s;
  } else if (const auto* v = msg.try_get<std::string_view>()) {
    text = *v;
  } else {
    ctx.write(std::move(msg), std::move(promise));
    return;
  }
  ByteBuf buf = ctx.alloc().buffer(text.size());
  buf.write_string(text);
  ctx.write(std::move(buf), std::move(promise));
}

}  // namespace trellis::codec
