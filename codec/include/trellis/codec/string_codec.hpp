// StringDecoder and StringEncoder: ByteBuf <-> std::string, bytes as they are (UTF-8 by
// convention; nothing is validated or transcoded).
#pragma once

#include <string>
#include <vector>

#include <trellis/pipeline/message_to_message_decoder.hpp>

namespace trellis::codec {

/// Each inbound ByteBuf becomes a std::string of its readable bytes. Put it after a frame
/// decoder: it does not frame by itself. Sharable.
class StringDecoder : public MessageToMessageDecoder<ByteBuf> {
 public:
  bool is_sharable() const noexcept override { return true; }

 protected:
  void decode(ChannelHandlerContext& ctx, ByteBuf msg, std::vector<Message>& out) override;
};

/// Each written std::string or std::string_view (string literals become std::string in a Message)
/// goes out as a ByteBuf of its bytes; the write's promise goes with it. Sharable.
class StringEncoder : public ChannelOutboundHandler {
 public:
  bool is_sharable() const noexcept override { return true; }
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;
};

}  // namespace trellis::codec
