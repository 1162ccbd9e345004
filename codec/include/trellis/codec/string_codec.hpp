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
  /// True: the decoder keeps no state.
  bool is_sharable() const noexcept override { return true; }

 protected:
  /// Appends `msg`'s readable bytes as a std::string to `out`.
  void decode(ChannelHandlerContext& ctx, ByteBuf msg, std::vector<Message>& out) override;
};

/// Each written std::string or std::string_view (string literals become std::string in a Message)
/// goes out as a ByteBuf of its bytes; the write's promise goes with it. Sharable.
class StringEncoder : public ChannelOutboundHandler {
 public:
  /// True: the encoder keeps no state.
  bool is_sharable() const noexcept override { return true; }
  /// Writes a string as a ByteBuf of its bytes; other messages pass on untouched.
  void write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) override;
};

}  // namespace trellis::codec
